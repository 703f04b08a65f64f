package orchestrator

import (
	"fmt"
	"math"

	"github.com/zenmetrics-go/zenmetrics/capability"
)

// The chooser: pure functions from what the profile measured and what the
// machine looks like now to a yes/no per rung and a predicted cost. Nothing
// here reads a clock, a lock or a device, so every rule is unit-tested on
// its own and the orchestrator only gathers inputs.

// vramHeadroom is the share of live free memory a task may be predicted to
// use. The 15 % left covers allocator rounding, driver-internal buffers and
// the error of the byte model; fragmentation makes "exactly fits" fail.
const vramHeadroom = 0.85

// extrapolation is the per-pixel penalty above the largest measured size:
// bigger working sets fall out of caches and TLBs, so cost per pixel grows.
const extrapolation = 1.2

// Default ns/px when nothing was measured: GPU first if there is one (the
// design's "sensible default"), strips a little dearer than full images,
// the CPU two orders of magnitude slower. Only the ordering matters much.
var defaultNsPerPx = map[string]float64{
	capability.ClassGPUFull:      1,
	capability.ClassGPUStrip:     1.5,
	capability.ClassGPUStripPair: 2,
	capability.ClassCPU:          100,
}

// predictNsPerPx interpolates the measured ns/px linearly in log2(pixels):
// clamped below the smallest measured size (small images are dominated by
// fixed costs that ns/px at 1 MP already overstates), ×1.2 above the
// largest. ok is false when nothing was measured for this class.
func predictNsPerPx(samples []capability.Sample, pixels int64) (ns float64, ok bool) {
	pts := make([]capability.Sample, 0, len(samples))
	for _, s := range samples {
		if s.NsPerPx > 0 && s.Pixels > 0 {
			pts = append(pts, s)
		}
	}
	if len(pts) == 0 {
		return 0, false
	}
	// samples come sorted by pixels from Profile.Samples; do not rely on it.
	for i := 1; i < len(pts); i++ {
		for j := i; j > 0 && pts[j].Pixels < pts[j-1].Pixels; j-- {
			pts[j], pts[j-1] = pts[j-1], pts[j]
		}
	}
	first, last := pts[0], pts[len(pts)-1]
	switch {
	case pixels <= first.Pixels:
		return first.NsPerPx, true
	case pixels > last.Pixels:
		return last.NsPerPx * extrapolation, true
	case pixels == last.Pixels:
		return last.NsPerPx, true
	}
	x := math.Log2(float64(pixels))
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if pixels > b.Pixels {
			continue
		}
		xa, xb := math.Log2(float64(a.Pixels)), math.Log2(float64(b.Pixels))
		t := (x - xa) / (xb - xa)
		return a.NsPerPx + t*(b.NsPerPx-a.NsPerPx), true
	}
	return last.NsPerPx, true // unreachable: pixels ≤ last.Pixels
}

// nsPerPxOrDefault is predictNsPerPx with the class default when nothing
// was measured.
func nsPerPxOrDefault(samples []capability.Sample, class string, pixels int64) float64 {
	if ns, ok := predictNsPerPx(samples, pixels); ok {
		return ns
	}
	if ns, ok := defaultNsPerPx[class]; ok {
		return ns
	}
	return defaultNsPerPx[capability.ClassCPU]
}

// predictBytes is the memory a task will need: the larger of the backend's
// own estimate and the profile's measurement scaled linearly in pixels from
// the nearest measured size (working sets are proportional to pixels). The
// larger wins because underestimating costs an OOM and a retry, while
// overestimating only costs a slower rung. 0 means unknown.
func predictBytes(samples []capability.Sample, pixels int64, estimate int64) int64 {
	best := int64(0)
	var near capability.Sample
	bestDist := math.Inf(1)
	for _, s := range samples {
		if s.VRAMMiB <= 0 || s.Pixels <= 0 {
			continue
		}
		d := math.Abs(math.Log2(float64(pixels)) - math.Log2(float64(s.Pixels)))
		if d < bestDist {
			bestDist, near = d, s
		}
	}
	if near.Pixels > 0 {
		best = int64(near.VRAMMiB * (1 << 20) * float64(pixels) / float64(near.Pixels))
	}
	return max(best, estimate)
}

// vramAdmits says whether a task predicted to need `need` bytes may run on
// a device with `free` bytes free now: need ≤ free × 0.85, and at least
// floor bytes must remain free afterwards (PoolConfig.VRAMSafetyFloorMiB,
// for GPUs shared with a desktop or another job). Unknown need (0) or
// unknown free (<0) admit: the ladder's OOM handling is the backstop.
func vramAdmits(need, free, floor int64) (bool, string) {
	if need <= 0 || free < 0 {
		return true, ""
	}
	if float64(need) > vramHeadroom*float64(free) {
		return false, fmt.Sprintf("needs %d MiB, %d MiB free (× %.2f = %d MiB usable)",
			need>>20, free>>20, vramHeadroom, int64(vramHeadroom*float64(free))>>20)
	}
	if floor > 0 && free-need < floor {
		return false, fmt.Sprintf("needs %d MiB of %d MiB free, leaving less than the %d MiB floor",
			need>>20, free>>20, floor>>20)
	}
	return true, ""
}

// oomBlocked says whether a recorded out-of-memory cell rules out this
// class at this size. A failure at N pixels rules out N and everything
// larger, except where the profile holds a successful measurement at a
// size larger than N that covers this one: then the failure was a bad
// moment (another process had the memory), not a size limit. A success at
// exactly N does not clear the cell, so a size that failed at run time is
// never tried again even if the quick bench once got through it.
func oomBlocked(cells []capability.Cell, samples []capability.Sample, class string, pixels int64) (bool, int64) {
	for _, c := range cells {
		if c.Backend != class || c.Pixels > pixels {
			continue
		}
		if c.Pixels == pixels {
			return true, c.Pixels
		}
		cleared := false
		for _, s := range samples {
			if s.NsPerPx > 0 && s.Pixels > c.Pixels && s.Pixels >= pixels {
				cleared = true
				break
			}
		}
		if !cleared {
			return true, c.Pixels
		}
	}
	return false, 0
}

// finishNs predicts when a task sent to a pool would finish: the predicted
// work already queued there shared among its workers, plus the
// initialisation of a cold device, plus the task itself.
func finishNs(backlogNs float64, workers int, initNs, taskNs float64) float64 {
	if workers < 1 {
		workers = 1
	}
	return backlogNs/float64(workers) + initNs + taskNs
}

// preferCPU is the cost rule between a GPU rung and the CPU: send the task
// to the CPU when it is predicted to finish there first. For a single cold
// task (empty queues) this is exactly "the GPU's initialisation cost
// outweighs its gain"; under load it also lets idle CPU workers take work
// from a long GPU queue.
func preferCPU(gpuFinishNs, cpuFinishNs float64) bool {
	return cpuFinishNs < gpuFinishNs
}
