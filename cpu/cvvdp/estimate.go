package cvvdp

import (
	"runtime"
)

// smallAlloc is the allowance for what EstimateBytes does not count one by
// one: the 16-bit sample table (256 KiB, built once per reference for
// 16-bit input), slice headers, the per-band results, goroutines.
const smallAlloc = 512 << 10

// estimateLayout is the pyramid EstimateBytes assumes: the most bands a
// w×h image can have (a display with many pixels per degree). Every
// display's pyramid has at most these levels, and the levels it lacks are
// the smallest, so the estimate is an upper bound for all of them and
// exact for the default display at most sizes.
func estimateLayout(w, h int) (layout, bool) {
	return newLayout(w, h, 1e9)
}

// refFloats is the number of float32 values a prepared reference keeps:
// R·S·gain and S per channel on every band below the base band, R on the
// base band.
func refFloats(l *layout) int64 {
	var n int64
	for b := 0; b < l.n; b++ {
		p := int64(l.w[b]) * int64(l.h[b])
		if b == l.n-1 {
			n += nCh * p
		} else {
			n += 2 * nCh * p
		}
	}
	return n
}

// EstimateBytes is the heap a prepared reference of a w×h image plus one
// concurrent scoring uses (runtime.GOMAXPROCS(0) threads), without the
// distortion map (MapBytes adds it); 0 below MinSide.
func EstimateBytes(w, h int) int64 {
	return estimate(w, h, runtime.GOMAXPROCS(0), false)
}

// MapBytes is what asking for the distortion map adds to EstimateBytes:
// the map's bands, two full-size planes to rebuild it, and the map.
func MapBytes(w, h int) int64 {
	return estimate(w, h, runtime.GOMAXPROCS(0), true) - estimate(w, h, runtime.GOMAXPROCS(0), false)
}

func estimate(w, h, threads int, heat bool) int64 {
	if w < MinSide || h < MinSide {
		return 0
	}
	l, ok := estimateLayout(w, h)
	if !ok {
		return 0
	}
	n32, n64 := scratchLen(&l, threads, heat)
	total := 4*(refFloats(&l)+int64(n32)) + 8*int64(n64) + smallAlloc
	if heat {
		total += 4 * int64(w) * int64(h) // the map returned
	}
	return total
}
