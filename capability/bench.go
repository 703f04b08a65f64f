package capability

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// Bench defaults: four sizes a factor of 4 apart in pixels (512² for
// the small photos batches are full of, where fixed per-image costs show,
// up to 4096²), enough to fit a line in log2(pixels).
//
// DefaultBenchTimeLimit is the soft limit of the whole bench: the GPU
// phase and then the CPU phase (Bench), so that zmwarm, with its probe
// and device start-up, stays within 20 s on a big GPU machine. A GPU's
// runtimes (WebGPU, CUDA) share its lane and so this budget: adding CUDA
// cells cuts large sizes of that lane rather than lengthening the bench.
var (
	DefaultBenchSides     = []int{512, 1024, 2048, 4096}
	DefaultBenchTimeLimit = 15 * time.Second
)

// DefaultCPUBenchMaxPixels keeps the CPU to the smaller sizes: 4096² on
// a 2-core machine would take longer than the whole quick bench may.
const DefaultCPUBenchMaxPixels = 2048 * 2048

// DefaultRunBudget is how much timed work a cell needs before it stops
// early (BenchConfig.RunBudget): a run of a quarter second or more varies
// by a few per cent, so repeating it buys little precision for its time.
const DefaultRunBudget = 250 * time.Millisecond

// Default timed runs of a cell (BenchConfig.Runs 0). A GPU cell gets more:
// its runs are short (a 16 MP score is 10–20 ms on an H200, so five fit
// the run budget), and the CUDA-against-WebGPU choice its p50 decides is
// often a matter of tens of per cent, where the median of three still
// moves with one slow run and the median of five does not.
const (
	DefaultRuns    = 3
	DefaultGPURuns = 5
)

// DefaultHostShare is the part of the time limit kept for the CPU phase
// when a GPU phase runs first (BenchConfig.HostShare): 5 s of the default
// 15, meant for the CPU's 512² and 1024² cells of every metric. A CPU
// round runs one task per worker side by side, so it takes about one
// task's time whatever the core count; at the 75–280 ns/px per task of a
// 2-core machine's profile that is 3–4 s (an estimate, not a measurement
// on a big host). The GPU cells, which decide the close CUDA-against-
// WebGPU races, get the rest, and what the GPU phase leaves unused goes
// to the CPU's larger sizes.
const DefaultHostShare = 1.0 / 3

// DefaultPrimeAllowance: priming a GPU lane costs 0.7 s on the H200 with
// the kernels cached on disk and 4.7 s with a cold NVRTC cache (every
// CUDA module compiled, side by side). Counted against the limit, a cold
// bench lost its 4096² cells, extrapolated them from 2048² and routed
// ColorVideoVDP's 16 MP images to the slower runtime (21 % regret,
// BENCHMARKS.md session 8). Up to 2 s of priming is therefore outside
// the limit: the bench's 15 s become at most 17, and zmwarm stays within
// its 20 s.
const DefaultPrimeAllowance = 2 * time.Second

// BenchTarget is one backend class to measure.
type BenchTarget struct {
	// Class is the profile key: ClassCPU, or a GPU runtime's class in
	// the target's layout (Runtime.Class: ClassGPUFull, ClassCUDAFull, ...).
	Class   string
	Backend zenmetrics.Backend
	// Lane names the device the target really runs on, when backends
	// alone do not tell: targets that share a Lane, or a Backend, take
	// turns; all others run side by side. Two runtimes' backends on one
	// GPU (a WebGPU adapter and the CUDA device under it) must share a
	// lane, or each would time the other's work as its own. "": the
	// Backend alone decides.
	Lane string
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
	// Concurrency is how many tasks the scheduler runs on this backend at
	// once (the orchestrator's CPU workers): the cell runs that many
	// one-shot tasks side by side and records the median time of one
	// task among them. CPU workers share caches, memory bandwidth and
	// (with SMT) cores, so one task alone on an idle machine is faster
	// than each of them in a batch; the chooser divides the queue by the
	// workers and needs the time of one task *among* them. 0 or 1: one
	// task at a time.
	Concurrency int
	// MemBytes bounds the memory the concurrent tasks may use together,
	// by Estimate (0: no bound): fewer run at once when they would not fit.
	MemBytes int64
	// Path describes what runs (threads, SIMD kernels), for the report.
	Path string
}

// BenchConfig says what Bench measures and how long it may take.
type BenchConfig struct {
	Metrics []zenmetrics.Metric // nil: every metric some target supports
	Targets []BenchTarget
	Sides   []int // square sizes; nil: DefaultBenchSides
	// WarmUps are the untimed runs before a (metric, target)'s first
	// measured size (they compile kernels and fill buffer pools); later
	// sizes warm up only where a run is cheap (under a quarter of
	// RunBudget). A MemoryMeter's measurement is taken on a warm-up when
	// there is one. 0: 1.
	WarmUps int
	// Runs is the most timed runs (rounds, with Concurrency) per cell; the
	// p50 of their times is recorded. 0: DefaultRuns, DefaultGPURuns for
	// a GPU target.
	Runs int
	// RunBudget stops a cell's timed runs once they add up to this much
	// (at least one runs). 0: DefaultRunBudget.
	RunBudget time.Duration
	// TimeLimit is soft: a size whose predicted cost would cross it is
	// skipped, a run in progress is never cut. 0: DefaultBenchTimeLimit.
	TimeLimit time.Duration
	// HostShare is the part of TimeLimit the CPU phase may count on: the
	// GPU phase, which runs first, skips cells that would end past
	// TimeLimit × (1 − HostShare). 0: DefaultHostShare; no CPU target:
	// the GPU phase has all of it.
	HostShare float64
	// PrimeAllowance is how much of a GPU lane's priming (the first task
	// of every metric, which compiles its kernels: primeGPU) is not
	// counted against TimeLimit. 0: DefaultPrimeAllowance; negative: all
	// of it counts.
	PrimeAllowance time.Duration
	// Settle says how a GPU cell waits for the GPU's clock before it is
	// timed (SettleConfig); the zero value is the defaults.
	Settle SettleConfig
	Seed   uint64
	Logger *slog.Logger
	// Progress, if set, sees each cell as it finishes (for a CLI); calls
	// are serialised, but cells of different backends interleave.
	Progress func(BenchResult)
	// Now stamps the profile (tests); nil: time.Now.
	Now func() time.Time
	// Clock times the cells and the time limit (tests: a fake clock the
	// fake backends advance, so that settling and limits are exact and no
	// test depends on the machine's speed); nil: time.Now.
	Clock func() time.Time
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
	// Concurrent is how many tasks ran side by side in each timed round
	// (BenchTarget.Concurrency after the memory bound; 0 or 1: one), and
	// Path what ran (BenchTarget.Path).
	Concurrent int    `json:"concurrent,omitempty"`
	Path       string `json:"path,omitempty"`
	// Skipped says why nothing was measured ("time limit", "unsupported", ...).
	Skipped string `json:"skipped,omitempty"`
	// Err is the failure, if the cell ran and failed (OOM included).
	Err   error           `json:"-"`
	Error string          `json:"error,omitempty"`
	Runs  []time.Duration `json:"runs_ns,omitempty"`
	// Spread is the timed runs' half range over their p50 ((max − min) /
	// 2 / p50, at least 0.001; 0 with one run): the noise of NsPerPx,
	// kept in the profile so that a routing check can tell a coin flip
	// from a real difference.
	Spread float64 `json:"spread,omitempty"`
	// SettleRuns is how many untimed runs a GPU cell spent waiting for the
	// GPU's clock (SettleConfig); Unsettled says they reached the cap
	// without two slices agreeing, so the timing may include a ramp.
	SettleRuns int  `json:"settle_runs,omitempty"`
	Unsettled  bool `json:"unsettled,omitempty"`
	// Runoff is how many of Runs came from a runoff against a GPU target
	// too close to tell apart (benchPlan.runoff), 0 for none.
	Runoff int `json:"runoff,omitempty"`
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

// benchPlan is what one Bench call shares among its lanes.
type benchPlan struct {
	cfg       BenchConfig
	sides     []int
	metrics   []zenmetrics.Metric
	warm      int
	runs      int // BenchConfig.Runs, 0 for the defaults (runsFor)
	budget    time.Duration
	limit     time.Duration
	hostShare float64
	allowance time.Duration // PrimeAllowance, defaults filled in
	extra     time.Duration // the largest priming allowance a lane took (under mu)
	settle    SettleConfig  // with the defaults filled in
	clock     func() time.Time
	start     time.Time
	log       *slog.Logger
	pairs     []benchPair // per side, generated once
	mu        sync.Mutex  // guards p, measured, progress calls
	p         *Profile
	measured  map[zenmetrics.Metric]bool
	cells     [][][]BenchResult // [side][metric][target]
	cancelled error
}

type benchPair struct {
	once      sync.Once
	ref, dist *zenmetrics.Image
}

func (b *benchPlan) pair(si int) (ref, dist *zenmetrics.Image) {
	bp := &b.pairs[si]
	bp.once.Do(func() { bp.ref, bp.dist = SyntheticPair(b.sides[si], b.sides[si], b.cfg.Seed) })
	return bp.ref, bp.dist
}

// Bench measures each metric on each target at each size, size by size so
// that the soft time limit cuts the largest sizes first (a lane's
// full-image targets at every size before its strip targets, and a GPU
// target far slower than another of its lane stopped early: runLane),
// and records the
// p50 ns/px (prepare + score + release: what a cold task costs) and the
// backend's memory estimate into p. A success at a size clears an OOM cell
// recorded there (the cell was the load of the day, not a limit); a failure
// with ErrOutOfMemory records one and stops that target at larger sizes.
//
// Targets sharing a backend or a Lane take turns in one lane, so a GPU's
// cells never measure each other, whichever runtime runs them. The GPU
// lanes are benched first, side by side (different devices), and the CPU
// lanes after them, one at a time: never beside a GPU cell. A CPU cell
// keeps every core busy, and a GPU cell timed beside it times its own
// host side (staging fills, submits, read-backs, its goroutine's turn on
// a core) under that load; benched side by side on the H200 host the same
// GPU cell varied up to 4.8× between benches, enough to flip the
// CUDA-against-WebGPU choice (issue #23), with that load one of the two
// likely causes. Each GPU cell is timed on a GPU whose clock has ramped
// (SettleConfig). The time limit is one wall-clock budget: each lane
// skips a cell whose predicted end would cross its phase's limit (the
// GPU phase's keeps HostShare for the CPU), so a lane with more targets
// (a GPU benched through two runtimes) measures fewer large sizes, not
// longer. The report lists the cells in the same order whatever the
// interleaving: by size, metric, then target.
func Bench(ctx context.Context, cfg BenchConfig, p *Profile) (rep *BenchReport, err error) {
	defer zenmetrics.Recover(&err)
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	b := &benchPlan{cfg: cfg, sides: cfg.Sides, metrics: cfg.Metrics, warm: cfg.WarmUps, runs: max(0, cfg.Runs),
		budget: cfg.RunBudget, limit: cfg.TimeLimit, hostShare: cfg.HostShare, settle: cfg.Settle.withDefaults(),
		clock: cfg.Clock, log: cfg.Logger, p: p, measured: map[zenmetrics.Metric]bool{}}
	if b.clock == nil {
		b.clock = time.Now
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if len(b.sides) == 0 {
		b.sides = DefaultBenchSides
	}
	if b.warm <= 0 {
		b.warm = 1
	}
	if b.hostShare <= 0 {
		b.hostShare = DefaultHostShare
	}
	b.hostShare = min(b.hostShare, 1)
	switch b.allowance = cfg.PrimeAllowance; {
	case b.allowance == 0:
		b.allowance = DefaultPrimeAllowance
	case b.allowance < 0:
		b.allowance = 0
	}
	if b.budget <= 0 {
		b.budget = DefaultRunBudget
	}
	if b.limit <= 0 {
		b.limit = DefaultBenchTimeLimit
	}
	if len(b.metrics) == 0 {
		b.metrics = zenmetrics.AllMetrics()
	}
	b.pairs = make([]benchPair, len(b.sides))
	b.cells = make([][][]BenchResult, len(b.sides))
	for si := range b.cells {
		b.cells[si] = make([][]BenchResult, len(b.metrics))
		for mi := range b.cells[si] {
			b.cells[si][mi] = make([]BenchResult, len(cfg.Targets))
		}
	}
	b.start = b.clock()
	gpuLanes, hostLanes := splitLanes(cfg.Targets)
	gpuLimit := b.limit
	if len(hostLanes) > 0 {
		gpuLimit = time.Duration(float64(b.limit) * (1 - b.hostShare))
	}
	panicErr := b.runPhase(ctx, gpuLanes, gpuLimit)
	for _, lane := range hostLanes {
		if err := b.runPhase(ctx, [][]int{lane}, b.limit+b.extra); panicErr == nil {
			panicErr = err
		}
	}
	rep = &BenchReport{}
	for si := range b.cells {
		for mi := range b.cells[si] {
			for ti, t := range cfg.Targets {
				if t.Metrics != nil && !slices.Contains(t.Metrics, b.metrics[mi]) {
					continue
				}
				if r := b.cells[si][mi][ti]; r.Class != "" {
					rep.Results = append(rep.Results, r)
				}
			}
		}
	}
	rep.Elapsed = b.clock().Sub(b.start)
	if panicErr != nil {
		return rep, panicErr
	}
	if b.cancelled != nil {
		return rep, b.cancelled
	}
	// Cancelled between cells (every later cell was skipped as
	// "cancelled"): a partial bench is not a profile.
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	t := now().UTC().Truncate(time.Second)
	for m := range b.measured {
		p.Metric(m).LastMeasured = t
	}
	p.LastValidated = t
	return rep, nil
}

// runPhase benches lanes side by side, each skipping cells that would end
// past limit (counted from the bench's start), and returns the first
// panic of any of them as an error.
func (b *benchPlan) runPhase(ctx context.Context, ls [][]int, limit time.Duration) error {
	var wg sync.WaitGroup
	var panicErr error
	for _, lane := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var perr error
			func() {
				defer zenmetrics.Recover(&perr)
				b.runLane(ctx, lane, limit)
			}()
			if perr != nil {
				b.mu.Lock()
				if panicErr == nil {
					panicErr = perr
				}
				b.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return panicErr
}

// onGPU says whether the target times a GPU (any class but ClassCPU): its
// cells settle the clock first and run in the GPU phase.
func (t BenchTarget) onGPU() bool { return t.Class != ClassCPU }

// splitLanes is lanes(ts) parted into the lanes with a GPU target and the
// CPU-only ones, each in lanes' order.
func splitLanes(ts []BenchTarget) (gpu, host [][]int) {
	for _, lane := range lanes(ts) {
		if slices.ContainsFunc(lane, func(i int) bool { return ts[i].onGPU() }) {
			gpu = append(gpu, lane)
		} else {
			host = append(host, lane)
		}
	}
	return gpu, host
}

// lanes groups the targets' indexes into lanes that run side by side: two
// targets share a lane when they share a backend or a non-empty Lane, and
// so does anything either shares with a third (a target may link two
// groups, which then merge). Lanes keep the order of first use, and the
// targets in a lane keep their order, which is the order their cells run.
func lanes(ts []BenchTarget) [][]int {
	var out [][]int
	linked := func(i, j int) bool {
		a, b := ts[i], ts[j]
		return (a.Lane != "" && a.Lane == b.Lane) || sameBackend(a.Backend, b.Backend)
	}
	for i := range ts {
		var joined []int // the lanes target i links to, merged into the first
		for li, lane := range out {
			for _, j := range lane {
				if linked(i, j) {
					joined = append(joined, li)
					break
				}
			}
		}
		if len(joined) == 0 {
			out = append(out, []int{i})
			continue
		}
		first := joined[0]
		for _, li := range joined[1:] {
			out[first] = append(out[first], out[li]...)
		}
		out[first] = append(out[first], i)
		slices.Sort(out[first])
		for k := len(joined) - 1; k >= 1; k-- {
			out = slices.Delete(out, joined[k], joined[k]+1)
		}
	}
	return out
}

// sameBackend compares two backends without panicking on a dynamic type
// that is not comparable (such backends each get a lane).
func sameBackend(a, b zenmetrics.Backend) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// record files a finished cell and shows it to Progress.
func (b *benchPlan) record(si, mi, ti int, res BenchResult) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cells[si][mi][ti] = res
	if b.cfg.Progress != nil {
		b.cfg.Progress(res)
	}
}

// concurrency is how many tasks of a cell run side by side: the target's
// Concurrency, fewer when their estimated memory would exceed MemBytes.
func concurrency(t BenchTarget, bytes int64) int {
	c := max(1, t.Concurrency)
	if t.MemBytes > 0 && bytes > 0 {
		c = int(min(int64(c), max(1, t.MemBytes/bytes)))
	}
	return c
}

func clearOOM(p *Profile, m zenmetrics.Metric, c Cell) {
	mp := p.Metric(m)
	mp.CellsFailedOOM = slices.DeleteFunc(mp.CellsFailedOOM, func(x Cell) bool { return x == c })
}

// median of ds; of an even count, the mean of the middle two (a cell
// stopped early by RunBudget may have two runs: neither alone is its p50).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
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
