package capability

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// Bench defaults: three sizes a decade apart in pixels, enough to fit a
// line in log2(pixels) without spending more than a few seconds each.
var (
	DefaultBenchSides     = []int{1024, 2048, 4096}
	DefaultBenchTimeLimit = 40 * time.Second
)

// DefaultCPUBenchMaxPixels keeps the CPU to the two smaller sizes: 4096² on
// a 2-core machine would take longer than the whole quick bench may.
const DefaultCPUBenchMaxPixels = 2048 * 2048

// BenchTarget is one backend class to measure.
type BenchTarget struct {
	// Class is the profile key: ClassGPUFull, ClassGPUStrip, ClassGPUStripPair or ClassCPU.
	Class   string
	Backend zenmetrics.Backend
	// Mode is passed to Estimate and Prepare (strips for the strip classes).
	Mode zenmetrics.Mode
	// MaxPixels is the largest size benched (0: no limit).
	MaxPixels int64
	// RecordVRAM stores the device memory of a run as vram_mib_at (GPU
	// classes): measured when the backend is a MemoryMeter (the peak of
	// its own accounting over one prepare + score + release), else
	// Estimate's prediction.
	RecordVRAM bool
	// Metrics restricts the metrics of this target (nil: BenchConfig.Metrics).
	Metrics []zenmetrics.Metric
}

// BenchConfig says what Bench measures and how long it may take.
type BenchConfig struct {
	Metrics []zenmetrics.Metric // nil: every metric some target supports
	Targets []BenchTarget
	Sides   []int // square sizes; nil: DefaultBenchSides
	WarmUps int   // 0: 2
	Runs    int   // 0: 3 (the p50 of these is recorded)
	// TimeLimit is soft: a size whose predicted cost would cross it is
	// skipped, a run in progress is never cut. 0: DefaultBenchTimeLimit.
	TimeLimit time.Duration
	Seed      uint64
	Logger    *slog.Logger
	// Progress, if set, sees each cell as it finishes (for a CLI).
	Progress func(BenchResult)
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// BenchResult is one (metric, class, size) cell.
type BenchResult struct {
	Metric  zenmetrics.Metric `json:"metric"`
	Class   string            `json:"backend"`
	Backend string            `json:"device"`
	Side    int               `json:"side"`
	Pixels  int64             `json:"pixels"`
	NsPerPx float64           `json:"ns_per_px,omitempty"`
	MPPerS  float64           `json:"mp_per_s,omitempty"`
	VRAMMiB float64           `json:"vram_mib,omitempty"`
	// VRAMPredictedMiB is Estimate's bytes; VRAMMeasured says VRAMMiB was
	// measured (a MemoryMeter), VRAMDeviceMiB is the device's own
	// used-memory rise over that run (NVML), -1 where unknown.
	VRAMPredictedMiB float64 `json:"vram_predicted_mib,omitempty"`
	VRAMMeasured     bool    `json:"vram_measured,omitempty"`
	VRAMDeviceMiB    float64 `json:"vram_device_mib,omitempty"`
	// Skipped says why nothing was measured ("time limit", "unsupported", ...).
	Skipped string `json:"skipped,omitempty"`
	// Err is the failure, if the cell ran and failed (OOM included).
	Err   error           `json:"-"`
	Error string          `json:"error,omitempty"`
	Runs  []time.Duration `json:"runs_ns,omitempty"`
}

// MemoryMeter is a backend that measures its own device memory over a run
// (the WebGPU backend: the bytes of every buffer it holds, and NVML's used
// memory on NVIDIA).
type MemoryMeter interface {
	// MeasureMemory runs fn and returns the most device bytes the backend
	// held during it above what it held before, and the device's
	// used-memory rise over it (-1: not available).
	MeasureMemory(ctx context.Context, fn func() error) (peak, deviceDelta int64, err error)
}

// BenchReport lists every cell, measured or skipped.
type BenchReport struct {
	Results []BenchResult `json:"results"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Bench measures each metric on each target at each size, size by size so
// that the soft time limit cuts the largest sizes first, and records the
// p50 ns/px (prepare + score + release: what a cold task costs) and the
// backend's memory estimate into p. A success at a size clears an OOM cell
// recorded there (the cell was the load of the day, not a limit); a failure
// with ErrOutOfMemory records one and stops that target at larger sizes.
func Bench(ctx context.Context, cfg BenchConfig, p *Profile) (rep *BenchReport, err error) {
	defer zenmetrics.Recover(&err)
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sides := cfg.Sides
	if len(sides) == 0 {
		sides = DefaultBenchSides
	}
	warm, runs := cfg.WarmUps, cfg.Runs
	if warm <= 0 {
		warm = 2
	}
	if runs <= 0 {
		runs = 3
	}
	limit := cfg.TimeLimit
	if limit <= 0 {
		limit = DefaultBenchTimeLimit
	}
	metrics := cfg.Metrics
	if len(metrics) == 0 {
		metrics = zenmetrics.AllMetrics()
	}
	start := time.Now()
	rep = &BenchReport{}
	type key struct {
		m zenmetrics.Metric
		t int
	}
	lastNs := map[key]float64{} // last ns/px, to predict the next size
	stopped := map[key]string{} // why a target stopped for a metric
	measured := map[zenmetrics.Metric]bool{}
	for _, side := range sides {
		px := int64(side) * int64(side)
		var ref, dist *zenmetrics.Image // generated lazily, once per size
		for _, m := range metrics {
			for ti, t := range cfg.Targets {
				if t.Metrics != nil && !slices.Contains(t.Metrics, m) {
					continue
				}
				res := BenchResult{Metric: m, Class: t.Class, Backend: t.Backend.Name(), Side: side, Pixels: px}
				k := key{m, ti}
				bytes, ok := t.Backend.Estimate(m, side, side, t.Mode)
				switch {
				case !ok:
					res.Skipped = "unsupported"
				case t.MaxPixels > 0 && px > t.MaxPixels:
					res.Skipped = "above this backend's bench size"
				case stopped[k] != "":
					res.Skipped = stopped[k]
				}
				if res.Skipped == "" {
					elapsed := time.Since(start)
					if ns, ok := lastNs[k]; ok {
						// Larger images cost a bit more per pixel (caches).
						predicted := time.Duration(ns * 1.2 * float64(px) * float64(warm+runs))
						if elapsed+predicted > limit {
							res.Skipped = fmt.Sprintf("time limit (%v predicted, %v left)", predicted.Round(time.Millisecond), (limit - elapsed).Round(time.Millisecond))
						}
					} else if elapsed > limit {
						res.Skipped = "time limit"
					}
				}
				if res.Skipped != "" {
					rep.Results = append(rep.Results, res)
					if cfg.Progress != nil {
						cfg.Progress(res)
					}
					continue
				}
				if ref == nil {
					ref, dist = SyntheticPair(side, side, cfg.Seed)
				}
				if t.RecordVRAM && bytes > 0 {
					res.VRAMMiB = float64(bytes) / (1 << 20)
					res.VRAMPredictedMiB = res.VRAMMiB
				}
				res.Runs, res.Err = timeRuns(ctx, t, m, ref, dist, warm, runs)
				if res.Err == nil && t.RecordVRAM {
					res.Err = measureVRAM(ctx, t, m, ref, dist, &res)
				}
				if res.Err != nil {
					if ctxErr := ctx.Err(); ctxErr != nil {
						return rep, ctxErr
					}
					res.Error = res.Err.Error()
					stopped[k] = "failed at a smaller size"
					if errors.Is(res.Err, zenmetrics.ErrOutOfMemory) {
						p.RecordOOM(m, Cell{Backend: t.Class, Pixels: px})
						stopped[k] = "out of memory at a smaller size"
					}
					log.Warn("bench cell failed", "metric", m, "backend", t.Class, "side", side, "err", res.Err)
				} else {
					p50 := median(res.Runs)
					res.NsPerPx = float64(p50.Nanoseconds()) / float64(px)
					res.MPPerS = 1e3 / res.NsPerPx
					lastNs[k] = res.NsPerPx
					p.SetSample(m, t.Class, Sample{Pixels: px, NsPerPx: res.NsPerPx, VRAMMiB: res.VRAMMiB})
					clearOOM(p, m, Cell{Backend: t.Class, Pixels: px})
					measured[m] = true
					log.Debug("bench cell", "metric", m, "backend", t.Class, "side", side, "ns_per_px", res.NsPerPx)
				}
				rep.Results = append(rep.Results, res)
				if cfg.Progress != nil {
					cfg.Progress(res)
				}
			}
		}
	}
	t := now().UTC().Truncate(time.Second)
	for m := range measured {
		p.Metric(m).LastMeasured = t
	}
	p.LastValidated = t
	rep.Elapsed = time.Since(start)
	return rep, nil
}

func clearOOM(p *Profile, m zenmetrics.Metric, c Cell) {
	mp := p.Metric(m)
	mp.CellsFailedOOM = slices.DeleteFunc(mp.CellsFailedOOM, func(x Cell) bool { return x == c })
}

// timeRuns does the warm-ups then the timed runs of one cell.
func timeRuns(ctx context.Context, t BenchTarget, m zenmetrics.Metric, ref, dist *zenmetrics.Image, warm, runs int) ([]time.Duration, error) {
	opt := zenmetrics.Options{Mode: t.Mode}
	once := func() (err error) {
		defer zenmetrics.Recover(&err)
		_, err = zenmetrics.ScoreOnce(ctx, t.Backend, m, ref, dist, opt)
		return err
	}
	for range warm {
		if err := once(); err != nil {
			return nil, err
		}
	}
	out := make([]time.Duration, 0, runs)
	for range runs {
		t0 := time.Now()
		if err := once(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// measureVRAM runs the cell once more under the backend's MemoryMeter and
// records the measured peak in res (nothing without a meter).
func measureVRAM(ctx context.Context, t BenchTarget, m zenmetrics.Metric, ref, dist *zenmetrics.Image, res *BenchResult) error {
	mm, ok := t.Backend.(MemoryMeter)
	if !ok {
		return nil
	}
	peak, dev, err := mm.MeasureMemory(ctx, func() (err error) {
		defer zenmetrics.Recover(&err)
		_, err = zenmetrics.ScoreOnce(ctx, t.Backend, m, ref, dist, zenmetrics.Options{Mode: t.Mode})
		return err
	})
	if err != nil {
		return err
	}
	res.VRAMMiB = float64(peak) / (1 << 20)
	res.VRAMMeasured = true
	res.VRAMDeviceMiB = -1
	if dev >= 0 {
		res.VRAMDeviceMiB = float64(dev) / (1 << 20)
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// SyntheticPair returns a photo-like RGB8 reference and a distorted copy of
// it, the same for the same seed. A flat or zero image would let a metric
// skip work (or hit denormals) and bench unrealistically, so the reference
// has what photos have: smooth gradients, fine texture at several
// frequencies, hard edges and sensor-like noise. The distortion is a mild
// blur plus noise plus coarse quantization in blocks, like a lossy codec.
func SyntheticPair(w, h int, seed uint64) (ref, dist *zenmetrics.Image) {
	ref = zenmetrics.NewImage(w, h, zenmetrics.RGB8)
	dist = zenmetrics.NewImage(w, h, zenmetrics.RGB8)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	// Texture tables: separable sums of sines, so per pixel it is two loads.
	tx := make([]float64, w)
	ty := make([]float64, h)
	f1, f2 := 0.05+rng.Float64()*0.05, 0.3+rng.Float64()*0.2
	for x := range tx {
		tx[x] = 18*math.Sin(float64(x)*f1) + 7*math.Sin(float64(x)*f2)
	}
	for y := range ty {
		ty[y] = 18*math.Cos(float64(y)*f1*1.3) + 7*math.Sin(float64(y)*f2*0.7)
	}
	// A few rectangles and discs give edges at every scale.
	type shape struct {
		x0, y0, x1, y1 int
		disc           bool
		col            [3]float64
	}
	shapes := make([]shape, 12)
	for i := range shapes {
		sw := 8 + rng.IntN(max(1, w/3))
		sh := 8 + rng.IntN(max(1, h/3))
		x0, y0 := rng.IntN(max(1, w)), rng.IntN(max(1, h))
		shapes[i] = shape{x0, y0, x0 + sw, y0 + sh, i%2 == 1,
			[3]float64{rng.Float64()*120 - 60, rng.Float64()*120 - 60, rng.Float64()*120 - 60}}
	}
	noise := func() float64 { return float64(rng.Uint32()&15) - 7.5 }
	for y := range h {
		row := ref.Row(y)
		for x := range w {
			base := [3]float64{
				40 + 160*float64(x)/float64(max(1, w-1)),
				40 + 160*float64(y)/float64(max(1, h-1)),
				120 + 50*math.Sin(float64(x+y)*0.002),
			}
			tex := tx[x] + ty[y]
			for _, s := range shapes {
				if x < s.x0 || x >= s.x1 || y < s.y0 || y >= s.y1 {
					continue
				}
				if s.disc {
					cx, cy := float64(s.x0+s.x1)/2, float64(s.y0+s.y1)/2
					rx, ry := float64(s.x1-s.x0)/2, float64(s.y1-s.y0)/2
					dx, dy := (float64(x)-cx)/rx, (float64(y)-cy)/ry
					if dx*dx+dy*dy > 1 {
						continue
					}
				}
				for c := range 3 {
					base[c] += s.col[c]
				}
			}
			for c := range 3 {
				row[3*x+c] = clamp8(base[c] + tex*(0.6+0.2*float64(c)) + noise())
			}
		}
	}
	for y := range h {
		src := ref.Row(y)
		dst := dist.Row(y)
		for x := range w {
			l, r := max(0, x-1), min(w-1, x+1)
			quant := (x/8+y/8)%3 == 0 // blocks quantized harder
			for c := range 3 {
				v := (float64(src[3*l+c]) + 2*float64(src[3*x+c]) + float64(src[3*r+c])) / 4
				v += noise() * 0.5
				if quant {
					v = math.Round(v/12) * 12
				}
				dst[3*x+c] = clamp8(v)
			}
		}
	}
	return ref, dist
}

func clamp8(v float64) byte {
	switch {
	case v <= 0:
		return 0
	case v >= 255:
		return 255
	}
	return byte(v + 0.5)
}
