package dssim

import (
	"math"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// The kernel sequences, written against a launcher and buffers only (no
// device, no uploads), so that the tests replay them without a GPU and
// check every launch (launch_test.go) or run them on the CPU
// (emulate_test.go).

// scaleDims lists the sizes of the scales dssim-core compares for a w×h
// image: scale k+1 is (w/2)×(h/2) of scale k and exists only when scale k
// is at least 8 pixels each way; at most 5.
func scaleDims(w, h int) [][2]int {
	dims := [][2]int{{w, h}}
	for len(dims) < maxScales {
		d := dims[len(dims)-1]
		if d[0] < minDownsample || d[1] < minDownsample {
			break
		}
		dims = append(dims, [2]int{d[0] / 2, d[1] / 2})
	}
	return dims
}

// layout describes the raw pixels in the upload buffer.
type layout struct {
	stride, channels, bps int
	alpha                 int // 1: the image has alpha (premultiplied, composited in lab)
}

// planes are a reference's img and mu planes per scale, resident.
type planes struct{ img, mu []*cuda.Buffer }

// slot is one scorer's device scratch with its worker (stream, staging):
// the raw upload, the linear planes of alternating scales (0, 2, 4 in
// lin[0]; 1, 3 in lin[1]), the L*a*b*, img and mu planes of the scale in
// progress (scale 0's size, reused), scale 0's SSIM map and the other
// scales' (reused), the pooling's row sums and counts, and the results.
type slot struct {
	wk           *cuda.Worker
	raw          *cuda.Buffer
	lin          [2]*cuda.Buffer
	lab, img, mu *cuda.Buffer
	maps         [2]*cuda.Buffer
	rows, cnt    *cuda.Buffer
	res          *cuda.Buffer
}

// resBytes is the results buffer: 8 doubles per scale.
const resBytes = int64(64 * maxScales)

// fillSlot allocates a slot's device buffers for a w×h image and uploads
// of up to raw bytes with alloc (the device, or the tests' fake
// allocator); slotBytes is the same list in bytes.
func fillSlot(s *slot, w, h int, raw int64, alloc func(int64) *cuda.Buffer) {
	for _, n := range slotSizes(w, h, raw) {
		b := alloc(n)
		s.list(b)
	}
}

// slotSizes is the size of every buffer of a slot, in fillSlot's order.
func slotSizes(w, h int, raw int64) []int64 {
	n0 := int64(w) * int64(h)
	n1 := max(1, int64(w/2)*int64(h/2))
	return []int64{raw, 16 * n0, 16 * n1, 16 * n0, 16 * n0, 16 * n0, 4 * n0, 4 * n1, 8 * int64(h), 8 * int64(h), resBytes}
}

// list stores the next buffer of fillSlot's order into its field.
func (s *slot) list(b *cuda.Buffer) {
	for _, f := range []**cuda.Buffer{&s.raw, &s.lin[0], &s.lin[1], &s.lab, &s.img, &s.mu, &s.maps[0], &s.maps[1], &s.rows, &s.cnt, &s.res} {
		if *f == nil {
			*f = b
			return
		}
	}
}

// buffers lists the slot's device buffers.
func (s *slot) buffers() []*cuda.Buffer {
	return []*cuda.Buffer{s.raw, s.lin[0], s.lin[1], s.lab, s.img, s.mu, s.maps[0], s.maps[1], s.rows, s.cnt, s.res}
}

// queueUnpack converts rows [y0, y1) of the raw image (w wide) into scale
// 0's linear and L*a*b* planes; oy is the image row of the plane's row 0
// (a strip's first crop row, 0 for a whole image).
func queueUnpack(q launch.Launcher, k *kernels, w, y0, y1, oy int, lay layout, raw, lut *cuda.Buffer, s *slot) error {
	if y1 <= y0 {
		return nil
	}
	g, b := pxGrid(w, y1-y0)
	return q.Launch(&k.unpack, g, b, raw, lut, w, y0, y1, lay.stride, lay.channels, lay.bps, lay.alpha, oy, s.lin[0], s.lab)
}

// unpacker is the callback of an overlapped upload of total raw bytes
// (a h-row image, or a strip's h-row crop starting at image row oy):
// given the bytes that have arrived (a prefix), it queues the unpack of
// the rows they complete and have not been converted yet.
func unpacker(q launch.Launcher, k *kernels, w, h, oy int, total int64, lay layout, lut *cuda.Buffer, s *slot) func(end int64) error {
	done := 0
	return func(end int64) error {
		rows := h
		if end < total {
			rows = int(end / int64(lay.stride)) // rows whose bytes have all arrived
		}
		if err := queueUnpack(q, k, w, done, rows, oy, lay, s.raw, lut, s); err != nil {
			return err
		}
		done = max(done, rows)
		return nil
	}
}

// queueScale queues scale sc's img and mu planes (into img, mu) from its
// L*a*b* plane: for sc > 0 first the downsampling of scale sc−1's linear
// planes and their L*a*b* (scale 0's come from queueUnpack). dims are the
// plane's scales (a strip's crop: its own), oy the image row of scale 0's
// row 0 (a multiple of 2^sc, so scale sc's is oy >> sc).
func queueScale(q launch.Launcher, k *kernels, dims [][2]int, sc, alpha, oy int, s *slot, img, mu *cuda.Buffer) error {
	w, h := dims[sc][0], dims[sc][1]
	g, b := pxGrid(w, h)
	if sc > 0 {
		if err := q.Launch(&k.down, g, b, s.lin[(sc-1)%2], dims[sc-1][0], w, h, s.lin[sc%2]); err != nil {
			return err
		}
		if err := q.Launch(&k.lab, g, b, s.lin[sc%2], w, h, alpha, oy>>sc, s.lab); err != nil {
			return err
		}
	}
	if err := q.Launch(&k.chroma, g, b, s.lab, w, h, img); err != nil {
		return err
	}
	return q.Launch(&k.stats, g, b, img, w, h, mu)
}

// queueReference queues the reference half after scale 0's unpack: every
// scale's img and mu planes into ref.
func queueReference(q launch.Launcher, k *kernels, dims [][2]int, alpha, oy int, s *slot, ref *planes) error {
	for sc := range dims {
		if err := queueScale(q, k, dims, sc, alpha, oy, s, ref.img[sc], ref.mu[sc]); err != nil {
			return err
		}
	}
	return nil
}

// queueMap queues scale sc's distorted img and mu planes and its SSIM map
// against ref's planes of that scale: plane rows [lo, hi) into rows
// [lo+row0, hi+row0) of m (a whole image: all rows, row0 0).
func queueMap(q launch.Launcher, k *kernels, dims [][2]int, sc, alpha, oy int, s *slot, ref *planes, lo, hi, row0 int, m *cuda.Buffer) error {
	if err := queueScale(q, k, dims, sc, alpha, oy, s, s.img, s.mu); err != nil {
		return err
	}
	w, h := dims[sc][0], dims[sc][1]
	g, b := pxGrid(w, h)
	return q.Launch(&k.ssim, g, b, ref.img[sc], ref.mu[sc], s.img, s.mu, w, h, lo, hi, row0, m)
}

// queuePool queues the pooling of scale sc's w×h map m into s.res.
func queuePool(q launch.Launcher, k *kernels, w, h, sc int, m *cuda.Buffer, s *slot) error {
	rg, rb := cuda.Dim3{X: uint32(h), Y: 1, Z: 1}, cuda.Dim3{X: rowThreads, Y: 1, Z: 1}
	one, sb := cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: sumThreads, Y: 1, Z: 1}
	if err := q.Launch(&k.rowSums, rg, rb, m, w, h, s.rows); err != nil {
		return err
	}
	n, expo := float64(w)*float64(h), math.Pow(0.5, float64(sc))
	if err := q.Launch(&k.mean, one, sb, s.rows, h, n, expo, sc, s.res); err != nil {
		return err
	}
	if err := q.Launch(&k.rowDevs, rg, rb, m, w, h, s.res, sc, s.rows, s.cnt); err != nil {
		return err
	}
	return q.Launch(&k.finish, one, sb, s.rows, s.cnt, h, sc, s.res)
}

// queueDistorted queues the distorted half after scale 0's unpack: per
// scale its img and mu planes, the SSIM map against ref and the map's
// pooling into s.res (scale 0's map stays in s.maps[0]).
func queueDistorted(q launch.Launcher, k *kernels, dims [][2]int, alpha int, s *slot, ref *planes) error {
	for sc := range dims {
		w, h := dims[sc][0], dims[sc][1]
		m := s.maps[min(sc, 1)]
		if err := queueMap(q, k, dims, sc, alpha, 0, s, ref, 0, h, 0, m); err != nil {
			return err
		}
		if err := queuePool(q, k, w, h, sc, m, s); err != nil {
			return err
		}
	}
	return nil
}

// pool finishes dssim-core's pooling in float64 from the results (8
// doubles per scale: mean, the device's avg, the sum of |avg − m| and the
// counts of values below and above avg), as cpu/dssim does: avg with Go's
// pow, the deviation sum moved from the device's avg to it when they
// differ (exact unless a map value lies between the two, which moves the
// sum by at most 2|Δ| per such value), the weighted mean of the scale
// scores and 1/ssim − 1.
func pool(dims [][2]int, res []float64) float64 {
	var sum, wsum float64
	for sc, d := range dims {
		v := res[8*sc : 8*sc+8]
		n := float64(d[0]) * float64(d[1])
		avg := math.Pow(math.Max(v[0], 0), math.Pow(0.5, float64(sc)))
		dev := v[2]
		if delta := avg - v[1]; delta != 0 {
			lt, gt := v[3], v[4]
			dev += delta*(lt-gt) + math.Abs(delta)*(n-lt-gt)
		}
		score := 1 - dev/n
		sum += score * scaleWeights[sc]
		wsum += scaleWeights[sc]
	}
	return 1/math.Max(sum/wsum, dssimEpsilon) - 1
}
