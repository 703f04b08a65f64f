package batch

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/sysmem"
	"github.com/zenmetrics-go/zenmetrics/orchestrator"
)

// Exit codes of CLI.
const (
	ExitOK      = 0 // every row scored
	ExitFatal   = 1 // the run could not go on (output not writable, backend failed to start, interrupted)
	ExitUsage   = 2 // bad flags, manifest or configuration
	ExitPartial = 3 // the run finished but some rows are error rows (or, for merge, rows are missing or conflict)
)

// BackendOptions are the command line's backend settings.
type BackendOptions struct {
	Name     string // --backend
	Threads  int    // --threads: goroutines inside one scoring
	CacheDir string // --cache-dir: where the capability profile lives
}

// Deps are what CLI takes from its caller. Zero fields get defaults.
type Deps struct {
	// OpenBackend opens --backend; nil knows "auto" and "cpu" (cpu.New).
	OpenBackend func(BackendOptions) (zenmetrics.Backend, error)
	// OpenOrchestrator builds the multi-device scheduler that --balance
	// and --metrics-addr run the batch on; nil is orchestrator.New.
	OpenOrchestrator func(context.Context, orchestrator.Config) (*orchestrator.Orchestrator, error)
	// Decode decodes images; nil is imageio.DecodeFileOptions with
	// --max-pixels.
	Decode DecodeFunc
	// Probe reads image headers; nil is imageio.ProbeFile with
	// --max-pixels.
	Probe ProbeFunc
	// Getenv reads the environment (shard variables); nil is os.Getenv.
	Getenv func(string) string
	// Stderr's terminal-ness decides the progress bar; IsTerminal(stderr)
	// when nil.
	IsTerminal func(io.Writer) bool
	// HasCUDA reports whether a CUDA device is usable; nil: none. With
	// one, --backend auto runs the batch on the orchestrator (its CUDA and
	// WebGPU slots and the CPU, routed per metric and size) instead of one
	// WebGPU backend with lanes: on the H200 the small-photo corpus batch
	// (SSIMULACRA2 + Butteraugli) went 942 rows/s on WebGPU lanes, 3826
	// on CUDA alone, 4093 through the orchestrator.
	HasCUDA func() bool
}

// IsBatchArgs reports whether a zmscore command line is for this package:
// the merge subcommand, or --manifest / --ref-dir / --dist-dir anywhere.
func IsBatchArgs(args []string) bool {
	if len(args) > 0 && args[0] == "merge" {
		return true
	}
	for _, a := range args {
		if a == "--" {
			return false
		}
		name := strings.TrimLeft(a, "-")
		name, _, _ = strings.Cut(name, "=")
		if strings.HasPrefix(a, "-") && (name == "manifest" || name == "ref-dir" || name == "dist-dir") {
			return true
		}
	}
	return false
}

// Options are the parsed batch flags.
type Options struct {
	Manifest, ManifestFormat string
	RefDir, DistDir          string
	PairPattern, RefPattern  string
	Metrics                  []zenmetrics.Metric
	Backend                  BackendOptions
	Workers, Decoders        int
	GPULanes                 int // --gpu-lanes: devices opened on the GPU (0: DefaultGPULanes)
	MemoryBudget             int64
	MaxPixels                int64 // --max-pixels: the largest image decoded
	Out                      string
	Format                   Format
	Resume, Force, Retry     bool
	Shard                    Shard
	ShardSet                 bool
	Progress                 ProgressMode
	ProgressInterval         time.Duration
	FlushInterval            time.Duration
	Quiet                    bool
	Stats                    bool     // --stats: print the stage table even with --quiet
	Balance                  string   // --balance: run on the orchestrator with this strategy
	MetricsAddr              string   // --metrics-addr: Prometheus text on this address
	GPUs                     string   // --gpus: comma-separated adapter indices (zmprobe's order) the orchestrator may use
	MetricsAllowRemote       bool     // --metrics-allow-remote: a non-loopback --metrics-addr
	Inputs                   []string // merge: the files to merge
}

// Usage is the help text of the batch modes.
const Usage = `zmscore batch mode: score many pairs, crash-safe and resumable.

  zmscore --manifest FILE [flags]             pairs from a TSV, CSV or JSONL manifest
  zmscore --ref-dir DIR --dist-dir DIR [flags] pairs from two folders
  zmscore merge --out FILE [--manifest FILE --metric M] SHARD_OUTPUT...

Input:
  --manifest FILE         columns/fields ref, dist, optional id and metric; paths relative to FILE
  --manifest-format F     tsv, csv or jsonl (default: by extension, else sniffed)
  --ref-dir, --dist-dir   pair DIST NAME__anything.ext with REF NAME__ref.ext
  --pair-pattern RE       regexp on distorted file names; group (?P<name>...) is the key
                          (default ` + DefaultDistPattern + `)
  --ref-pattern RE        the same for reference names (default ` + DefaultRefPattern + `)
  --metric LIST           comma-separated metrics (default ssim2), e.g. ssim2,butteraugli
Output (one row per pair and metric: id ref dist metric score extras backend ms error):
  --out FILE              output file (required; "-" for stdout, JSONL/CSV only, no resume);
                          "{shard}" in it becomes shard-IIII-of-NNNN
  --format F              jsonl, csv or parquet (default: by --out extension, else jsonl)
  --resume                keep the rows already in --out, score only the rest
  --force                 start --out over
  --retry-failed          with --resume: score again the pairs whose row is an error
Compute:
  --backend NAME          auto, cpu, ... (default auto: with a CUDA device, the orchestrator over
                          CUDA, WebGPU and the CPU; else one GPU backend with --gpu-lanes, or the CPU)
  --workers N             pairs scored at once (default: number of CPUs)
  --threads N             goroutines inside one scoring (default 1)
  --gpu-lanes N           devices opened on a GPU backend, the workers spread over them
                          (default 3; 1: one device)
  --decoders N            files decoded at once (default: number of CPUs); each reference
                          is decoded once for all its pairs
  --mem-budget SIZE       memory for decoded images and CPU scoring in flight, e.g. 8GiB (default:
                          3/4 of the physical memory or cgroup limit, at most 9/10 of what is
                          available at start); a pair predicted (from the image headers) to need
                          more is an error row, not a crash (CPU Butteraugli and SSIMULACRA2:
                          strips first)
  --max-pixels N          refuse images whose header declares more pixels (default 2^30)
  --cache-dir DIR         capability profile folder, passed to the backend
Scale-out:
  --shard I/N             score only pairs with hash(id) mod N == I; default from
                          ZENMETRICS_SHARD, JOB_COMPLETION_INDEX + ZENMETRICS_SHARDS (Kubernetes
                          Indexed Job), or SLURM_ARRAY_TASK_ID/_MIN/_STEP/_COUNT (Slurm array)
Progress:
  --progress MODE         auto (bar on a terminal, else lines), bar, lines, json, none
  --progress-interval D   time between reports (default 200ms bar, 10s otherwise)
  --flush-interval D      longest time finished rows wait before being fsynced (default 2s)
  --quiet                 no progress, no summary and no stage table
  --stats                 print the table of time by stage (decode, prepare, upload, score, write,
                          waits) even with --quiet or --progress json; it is printed anyway
                          after the summary otherwise. The JSON summary always has "stages".
                          With --balance or --metrics-addr it adds a table per device.

Several devices (--backend auto or cpu only; an explicit backend is never overridden):
  --balance NAME          schedule over every GPU and the CPU pool: adaptive (default: measured
                          speed per device), round-robin, least-loaded, weighted (profiled speed).
                          --progress json lines then carry "devices" (per-device statistics)
  --metrics-addr ADDR     serve Prometheus text at http://ADDR/metrics while the batch runs
                          (loopback only, e.g. 127.0.0.1:9464; implies --balance adaptive)
  --metrics-allow-remote  allow a non-loopback --metrics-addr
  --gpus LIST             only these GPUs by ordinal: WebGPU adapter i and CUDA device i of zmprobe's
                          lists (e.g. 0 or 0,1; "none": CPU only); implies --balance adaptive. For
                          one-GPU-versus-two comparisons.

Exit status: 0 all rows scored, 3 some rows are errors (merge: rows missing or in conflict),
2 usage, 1 fatal (rerun with --resume after fixing it).
`

// ParseFlags parses the batch flags (args without the program name; for
// merge, without the word "merge"). done is true when the caller should
// exit with code (help or a usage error, already printed on stderr).
func ParseFlags(args []string, merge bool, stderr io.Writer) (o Options, done bool, code int) {
	name := "zmscore"
	if merge {
		name = "zmscore merge"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var metrics, format, shard, progress, budget string
	fs.StringVar(&o.Manifest, "manifest", "", "")
	fs.StringVar(&o.ManifestFormat, "manifest-format", "", "")
	fs.StringVar(&o.RefDir, "ref-dir", "", "")
	fs.StringVar(&o.DistDir, "dist-dir", "", "")
	fs.StringVar(&o.PairPattern, "pair-pattern", "", "")
	fs.StringVar(&o.RefPattern, "ref-pattern", "", "")
	fs.StringVar(&metrics, "metric", "ssim2", "")
	fs.StringVar(&o.Backend.Name, "backend", "auto", "")
	fs.IntVar(&o.Backend.Threads, "threads", 1, "")
	fs.StringVar(&o.Backend.CacheDir, "cache-dir", "", "")
	fs.IntVar(&o.Workers, "workers", runtime.NumCPU(), "")
	fs.IntVar(&o.Decoders, "decoders", 0, "")
	fs.IntVar(&o.GPULanes, "gpu-lanes", 0, "")
	fs.StringVar(&budget, "mem-budget", "", "")
	fs.Int64Var(&o.MaxPixels, "max-pixels", imageio.DefaultMaxPixels, "")
	fs.StringVar(&o.Out, "out", "", "")
	fs.StringVar(&format, "format", "", "")
	fs.BoolVar(&o.Resume, "resume", false, "")
	fs.BoolVar(&o.Force, "force", false, "")
	fs.BoolVar(&o.Retry, "retry-failed", false, "")
	fs.StringVar(&shard, "shard", "", "")
	fs.StringVar(&progress, "progress", "auto", "")
	fs.DurationVar(&o.ProgressInterval, "progress-interval", 0, "")
	fs.DurationVar(&o.FlushInterval, "flush-interval", 2*time.Second, "")
	fs.BoolVar(&o.Quiet, "quiet", false, "")
	fs.BoolVar(&o.Stats, "stats", false, "")
	fs.StringVar(&o.Balance, "balance", "", "")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "", "")
	fs.StringVar(&o.GPUs, "gpus", "", "")
	fs.BoolVar(&o.MetricsAllowRemote, "metrics-allow-remote", false, "")
	fail := func(format string, a ...any) (Options, bool, int) {
		fmt.Fprintf(stderr, "%s: "+format+"\n", append([]any{name}, a...)...)
		fmt.Fprintf(stderr, "run '%s --help' for usage\n", name)
		return o, true, ExitUsage
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, Usage)
			return o, true, ExitOK
		}
		return fail("%v", err)
	}
	var err error
	if o.Metrics, err = zenmetrics.ParseMetrics(metrics); err != nil {
		return fail("--metric: %v", err)
	}
	if format != "" {
		if o.Format, err = ParseFormat(format); err != nil || o.Format == TSV {
			return fail("--format: want jsonl, csv or parquet, not %q", format)
		}
	}
	if o.Progress, err = ParseProgressMode(progress); err != nil {
		return fail("--progress: %v", err)
	}
	if o.Quiet {
		o.Progress = ProgressNone
	}
	o.MemoryBudget = sysmem.DefaultBudget()
	if budget != "" {
		if o.MemoryBudget, err = ParseSize(budget); err != nil || o.MemoryBudget <= 0 {
			return fail("--mem-budget: bad size %q", budget)
		}
	}
	if o.MaxPixels <= 0 {
		return fail("--max-pixels must be positive, not %d", o.MaxPixels)
	}
	if shard != "" {
		if o.Shard, err = ParseShard(shard); err != nil {
			return fail("--shard: %v", err)
		}
		o.ShardSet = true
	}
	if o.Workers < 1 || o.Backend.Threads < 0 || o.Decoders < 0 || o.GPULanes < 0 {
		return fail("--workers, --threads, --decoders and --gpu-lanes must be positive")
	}
	if o.Out == "" {
		return fail("--out is required")
	}
	if o.Resume && o.Force {
		return fail("--resume and --force exclude each other")
	}
	if o.Retry && !o.Resume {
		return fail("--retry-failed needs --resume")
	}
	if (o.RefDir == "") != (o.DistDir == "") {
		return fail("--ref-dir and --dist-dir go together")
	}
	if o.Manifest != "" && o.RefDir != "" {
		return fail("give --manifest or --ref-dir/--dist-dir, not both")
	}
	o.Inputs = fs.Args()
	if merge {
		if len(o.Inputs) == 0 {
			return fail("no files to merge")
		}
	} else {
		if o.Manifest == "" && o.RefDir == "" {
			return fail("give --manifest or --ref-dir and --dist-dir")
		}
		if len(o.Inputs) > 0 {
			return fail("unexpected arguments %q", o.Inputs)
		}
	}
	return o, false, ExitOK
}

// ParseSize parses a byte count such as 512MiB, 2GiB, 1.5G, 100000.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') && s[i-1] != '.' {
		i--
	}
	v, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, err
	}
	mult := map[string]float64{"": 1, "b": 1, "k": 1e3, "kb": 1e3, "kib": 1 << 10, "m": 1e6, "mb": 1e6, "mib": 1 << 20,
		"g": 1e9, "gb": 1e9, "gib": 1 << 30, "t": 1e12, "tb": 1e12, "tib": 1 << 40}[strings.ToLower(s[i:])]
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q", s[i:])
	}
	return int64(v * mult), nil
}

// loadPairs reads the manifest or pairs the folders.
func loadPairs(o *Options, stderr io.Writer) ([]Pair, error) {
	if o.Manifest != "" {
		var f Format
		if o.ManifestFormat != "" {
			var err error
			if f, err = ParseFormat(o.ManifestFormat); err != nil || f == Parquet {
				return nil, &ConfigError{fmt.Sprintf("--manifest-format: want tsv, csv or jsonl, not %q", o.ManifestFormat)}
			}
		}
		p, err := ReadManifest(o.Manifest, f)
		var me *ManifestError
		if errors.As(err, &me) || errors.Is(err, os.ErrNotExist) {
			return nil, &ConfigError{err.Error()}
		}
		return p, err
	}
	pairs, unpaired, err := PairDirs(o.RefDir, o.DistDir, o.RefPattern, o.PairPattern)
	if err != nil {
		return nil, &ConfigError{err.Error()}
	}
	for i, u := range unpaired {
		if i == 10 {
			fmt.Fprintf(stderr, "zmscore: warning: ... and %d more distorted files without a reference\n", len(unpaired)-10)
			break
		}
		fmt.Fprintf(stderr, "zmscore: warning: no reference for %s\n", u)
	}
	if len(pairs) == 0 {
		return nil, &ConfigError{fmt.Sprintf("no pairs found under %s and %s", o.RefDir, o.DistDir)}
	}
	return pairs, nil
}

func defaultOpenBackend(o BackendOptions) (zenmetrics.Backend, error) {
	switch strings.ToLower(o.Name) {
	case "", "auto", "cpu":
		return cpu.New(cpu.Config{Threads: o.Threads}), nil
	}
	return nil, &ConfigError{fmt.Sprintf("unknown backend %q", o.Name)}
}

// CLI runs `zmscore --manifest ...`, `zmscore --ref-dir ...` or
// `zmscore merge ...` (args without the program name) and returns the exit
// code. ctx should be cancelled on SIGINT/SIGTERM: rows finished by then
// are committed and a rerun with --resume goes on from there.
func CLI(ctx context.Context, args []string, stdout, stderr io.Writer, deps Deps) int {
	// Decode and Probe are set once the flags are known (--max-pixels).
	defaultDecode := deps.Decode == nil
	if deps.OpenBackend == nil {
		deps.OpenBackend = defaultOpenBackend
	}
	if deps.Getenv == nil {
		deps.Getenv = os.Getenv
	}
	if deps.IsTerminal == nil {
		deps.IsTerminal = IsTerminal
	}
	merge := len(args) > 0 && args[0] == "merge"
	if merge {
		args = args[1:]
	}
	o, done, code := ParseFlags(args, merge, stderr)
	if done {
		return code
	}
	if merge {
		return cliMerge(&o, stdout, stderr)
	}
	// The budget as the runtime's soft limit: the collector keeps the heap
	// near the live data the budget predicts (sysmem.SoftLimit).
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(sysmem.SoftLimit(o.MemoryBudget)))
	imOpt := imageio.Options{MaxPixels: o.MaxPixels}
	if defaultDecode {
		deps.Decode = func(path string) (*zenmetrics.Image, error) { return imageio.DecodeFileOptions(path, imOpt) }
	}
	if deps.Probe == nil {
		deps.Probe = func(path string) (ImageHeader, error) {
			info, err := imageio.ProbeFile(path, imOpt)
			return ImageHeader{Width: info.Width, Height: info.Height, DecodeBytes: info.DecodeBytes}, err
		}
	}
	fatal := func(err error) int {
		fmt.Fprintf(stderr, "zmscore: %v\n", err)
		var ce *ConfigError
		if errors.As(err, &ce) {
			return ExitUsage
		}
		return ExitFatal
	}
	if !o.ShardSet {
		s, found, err := ShardFromEnv(deps.Getenv)
		if err != nil {
			return fatal(&ConfigError{err.Error()})
		}
		if found {
			o.Shard = s
		}
	}
	out := ShardPath(o.Out, o.Shard)
	pairs, err := loadPairs(&o, stderr)
	if err != nil {
		return fatal(err)
	}
	var engine Engine
	var ws WorkingSetFunc
	var orch *orchestrator.Orchestrator
	autoCUDA := strings.EqualFold(o.Backend.Name, "auto") && o.GPULanes == 0 && deps.HasCUDA != nil && deps.HasCUDA()
	if o.Balance != "" || o.MetricsAddr != "" || o.GPUs != "" || autoCUDA {
		if orch, err = openOrchestrator(ctx, &o, deps); err != nil {
			return fatal(err)
		}
		defer orch.Close()
		if o.MetricsAddr != "" {
			addr, stop, err := orch.ServeMetrics(o.MetricsAddr, o.MetricsAllowRemote)
			if err != nil {
				return fatal(&ConfigError{fmt.Sprintf("--metrics-addr: %v", err)})
			}
			defer stop()
			if !o.Quiet {
				fmt.Fprintf(stderr, "zmscore: metrics at http://%s/metrics\n", addr)
			}
		}
		engine = NewOrchestratorEngine(orch, 0)
	} else {
		backend, err := deps.OpenBackend(o.Backend)
		if err != nil {
			return fatal(fmt.Errorf("backend %s: %w", o.Backend.Name, err))
		}
		defer backend.Close()
		if b, ok := backend.(interface{ SetMemBudget(int64) }); ok {
			b.SetMemBudget(o.MemoryBudget) // the CPU backend's own check in Prepare
		}
		lanes := []BackendFor{func(zenmetrics.Metric) (zenmetrics.Backend, error) { return backend, nil }}
		for _, b := range openLanes(&o, deps, backend, stderr) {
			defer b.Close()
			lanes = append(lanes, func(zenmetrics.Metric) (zenmetrics.Backend, error) { return b, nil })
		}
		be, err := NewBackendEngine(BackendEngineConfig{
			Backend: lanes[0],
			Lanes:   lanes,
			Workers: o.Workers,
		})
		if err != nil {
			return fatal(err)
		}
		if _, gpu := backend.(UploadMeter); gpu {
			// Compile the kernels while the first images decode.
			be.Prewarm(o.Metrics)
		}
		engine, ws = be, cpuWorkingSet(backend)
	}
	defer engine.Close()
	var prog *Progress
	if o.Progress != ProgressNone {
		mode := o.Progress
		if mode == ProgressAuto {
			mode = ProgressLines
			if deps.IsTerminal(stderr) {
				mode = ProgressBar
			}
		}
		prog = NewProgress(mode, stderr, o.ProgressInterval)
		if prog != nil && orch != nil {
			prog.devices = func() any { return orch.Stats() }
		}
	}
	if !o.Quiet && !o.Shard.All() {
		fmt.Fprintf(stderr, "zmscore: shard %s → %s\n", o.Shard, out)
	}
	cfg := Config{Pairs: pairs, Metrics: o.Metrics, Out: out, Stdout: stdout, Format: o.Format,
		Resume: o.Resume, Force: o.Force, RetryFailed: o.Retry, Shard: o.Shard, Engine: engine,
		Decode: deps.Decode, Decoders: o.Decoders, MemoryBudget: o.MemoryBudget,
		Probe: deps.Probe, WorkingSet: ws,
		FlushInterval: o.FlushInterval, Progress: prog, Log: stderr}
	sum, err := Run(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "zmscore: interrupted after %d rows; rerun with --resume to go on\n", sum.OK+sum.Failed)
			return ExitFatal
		}
		return fatal(err)
	}
	summary := !o.Quiet && o.Progress != ProgressJSON
	if summary {
		printSummary(stderr, &sum)
	}
	if summary || o.Stats {
		PrintStages(stderr, &sum)
		if orch != nil {
			PrintDevices(stderr, orch.Stats())
		}
	}
	if !sum.AllOK() {
		return ExitPartial
	}
	return ExitOK
}

// parseGPUList reads --gpus: "none" (no GPU) or comma-separated adapter
// indices, each at most once. Whether an index names a real adapter is
// checked by the orchestrator against the probe.
func parseGPUList(v string) ([]int, error) {
	if strings.EqualFold(strings.TrimSpace(v), "none") {
		return []int{}, nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not an adapter index (0, 1, ... or none)", f)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("adapter %d listed twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// DefaultGPULanes is how many devices a batch on one GPU opens (zmscore
// --gpu-lanes 0). A score of a small image holds its device thread until
// its results are back (~2.3 ms of thread time per score on an H200 for
// 0.25–0.6 MP photos, half of it waiting for the GPU), so one device
// keeps the GPU busy only part of the time; more devices on the same
// adapter, each with its own thread, overlap those waits. Measured on an
// H200 (the corpus's small photos, 520 rows, both metrics): 1, 2, 3, 4
// lanes gave 256, 283, 324, 296 rows/s with a cold driver shader cache and
// 1 → 3 lanes 482 → 598 rows/s with a warm one; 3 it is.
const DefaultGPULanes = 3

// openLanes opens the extra devices of a GPU batch: more backends like
// first (deps.OpenBackend with the same options), side by side, up to
// --gpu-lanes in all and never more than the workers. A CPU backend gets
// none (it is one pool already); a lane that fails to open is left out
// with a warning: the batch runs on the lanes it has.
func openLanes(o *Options, deps Deps, first zenmetrics.Backend, stderr io.Writer) []zenmetrics.Backend {
	if _, gpu := first.(UploadMeter); !gpu {
		return nil
	}
	n := o.GPULanes
	if n == 0 {
		n = DefaultGPULanes
	}
	n = min(n, o.Workers)
	if n <= 1 {
		return nil
	}
	got := make([]zenmetrics.Backend, n-1)
	errs := make([]error, n-1)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = deps.OpenBackend(o.Backend)
		}()
	}
	wg.Wait()
	var out []zenmetrics.Backend
	for i, b := range got {
		switch {
		case errs[i] != nil:
			fmt.Fprintf(stderr, "zmscore: warning: GPU lane %d not opened: %v\n", i+2, errs[i])
		case b == nil:
		case b.Name() != first.Name():
			// Not the same device kind (e.g. auto fell back to the CPU).
			b.Close()
		default:
			out = append(out, b)
		}
	}
	return out
}

// openOrchestrator builds the scheduler for --balance/--metrics-addr/--gpus.
// Only --backend auto (every device) and cpu (the CPU pool alone) mean
// anything to it; any other explicit choice is an error rather than being
// silently overridden.
func openOrchestrator(ctx context.Context, o *Options, deps Deps) (*orchestrator.Orchestrator, error) {
	bal, err := orchestrator.ParseBalance(o.Balance)
	if err != nil {
		return nil, &ConfigError{"--balance: " + err.Error()}
	}
	if o.MetricsAddr != "" {
		if err := orchestrator.CheckMetricsAddr(o.MetricsAddr, o.MetricsAllowRemote); err != nil {
			return nil, &ConfigError{"--metrics-addr: " + err.Error()}
		}
	}
	cfg := orchestrator.Config{CacheDir: o.Backend.CacheDir, Balance: bal, MaxParallelCPU: o.Workers, CPUThreads: o.Backend.Threads}
	if o.GPUs != "" {
		gpus, err := parseGPUList(o.GPUs)
		if err != nil {
			return nil, &ConfigError{"--gpus: " + err.Error()}
		}
		cfg.GPUs = gpus
	}
	switch strings.ToLower(o.Backend.Name) {
	case "", "auto":
	case "cpu":
		cfg.DisableGPU = true
	default:
		return nil, &ConfigError{fmt.Sprintf("--balance and --metrics-addr schedule over every device: use --backend auto or cpu, not %q", o.Backend.Name)}
	}
	open := deps.OpenOrchestrator
	if open == nil {
		open = orchestrator.New
	}
	orch, err := open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	return orch, nil
}

// PrintDevices prints the per-device table of --stats (orchestrator runs).
func PrintDevices(w io.Writer, devs []orchestrator.DeviceStats) {
	fmt.Fprintf(w, "%-12s %7s %7s %5s %9s %9s %6s %6s %10s\n", "device", "tasks", "failed", "ooms", "fallbacks", "busy", "queue", "max_q", "Mpx/s(ema)")
	for _, d := range devs {
		name := d.Name
		if d.Lost {
			name += " (lost)"
		}
		fmt.Fprintf(w, "%-12s %7d %7d %5d %9d %9s %6d %6d %10.2f\n", name, d.Tasks, d.Failures, d.OOMs, d.Fallbacks,
			d.Busy.Round(time.Millisecond), d.QueueDepth, d.MaxQueueDepth, d.EMAMpxPerS)
	}
}

// cpuWorkingSet predicts the memory of a pair when backend scores on the
// CPU: its WorkingSet under the budget (heap, one strip's for Butteraugli
// and SSIMULACRA2 over the budget). GPU backends account their own device memory, and
// the CPU backend they may fall back to checks its own budget.
func cpuWorkingSet(backend zenmetrics.Backend) WorkingSetFunc {
	ws, ok := backend.(interface {
		WorkingSet(m zenmetrics.Metric, w, h, bpp int) (int64, bool)
	})
	if !ok || backend.Name() != "cpu" {
		return nil
	}
	return func(m zenmetrics.Metric, w, h int) (int64, bool) { return ws.WorkingSet(m, w, h, workingSetBpp) }
}

func printSummary(w io.Writer, s *Summary) {
	rate := 0.0
	if s.Elapsed > 0 {
		rate = float64(s.OK+s.Failed) / s.Elapsed.Seconds()
	}
	fmt.Fprintf(w, "zmscore: %d rows (%d pairs) in %s, %.1f rows/s: %d ok, %d failed, %d skipped (done before",
		s.Total, s.Pairs, s.Elapsed.Round(time.Millisecond), rate, s.OK, s.Failed, s.Skipped)
	if s.SkippedFailed > 0 {
		fmt.Fprintf(w, ", %d of them failed: --resume --retry-failed scores them again", s.SkippedFailed)
	}
	fmt.Fprintf(w, ")\n")
	names := make([]string, 0, len(s.ByBackend))
	for k := range s.ByBackend {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		c := s.ByBackend[k]
		fmt.Fprintf(w, "  %-12s %d ok, %d failed, %d skipped\n", k+":", c.OK, c.Failed, c.Skipped)
	}
	fmt.Fprintf(w, "  output: %s\n", s.Out)
}

func cliMerge(o *Options, stdout, stderr io.Writer) int {
	var pairs []Pair
	if o.Manifest != "" || o.RefDir != "" {
		var err error
		if pairs, err = loadPairs(o, stderr); err != nil {
			fmt.Fprintf(stderr, "zmscore merge: %v\n", err)
			return ExitUsage
		}
	}
	rep, err := Merge(MergeConfig{Inputs: o.Inputs, Out: o.Out, Format: o.Format, Pairs: pairs, Metrics: o.Metrics, Log: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "zmscore merge: %v\n", err)
		var ce *ConfigError
		if errors.As(err, &ce) {
			return ExitUsage
		}
		return ExitFatal
	}
	if o.Progress == ProgressJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintf(stdout, "%s\n", b)
	} else if !o.Quiet {
		fmt.Fprintf(stderr, "zmscore merge: %d files, %d rows read, %d written to %s; %d duplicates (%d conflicting), %d failed rows",
			rep.Files, rep.Read, rep.Rows, o.Out, rep.Duplicates, rep.Conflicts, rep.Failed)
		if len(pairs) > 0 {
			fmt.Fprintf(stderr, ", %d missing, %d not in the manifest", rep.Missing, rep.Extra)
		}
		fmt.Fprintln(stderr)
	}
	if rep.Missing > 0 || rep.Conflicts > 0 || rep.Failed > 0 {
		return ExitPartial
	}
	return ExitOK
}
