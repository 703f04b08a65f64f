// Command zmwarm makes sure this machine has a fresh capability profile,
// running the quick bench only when the profile is missing, stale (older
// than --validity, or the GPU model or driver changed), corrupt, or copied
// from other hardware, and prints what the profile says.
//
//	zmwarm [--force] [--json] [--print] [--cache-dir DIR] [--cpu-only]
//	       [--metrics ssim2,...] [--sizes 512,1024,2048,4096] [--time-limit 15s]
//	       [--validity 168h] [--runs N] [--run-budget 250ms]
//	       [--compare-routing PROFILE] [-v] [--version] [--help]
//
// The table lists each cell's ns/px with its spread (the timed runs' half
// range over their median); a GPU cell is timed after the GPU's clock has
// ramped (capability.SettleConfig), and one timed at the settle cap says
// so in its note.
//
// --compare-routing checks the routing this machine's profile leads to
// against another profile of it, usually a slow, thorough bench
// (`zmwarm --force --cache-dir DIR --time-limit 5m --runs 9 --run-budget 2s`):
// for every metric and square size from 256² to 8192², the class the
// chooser would prefer by each profile, and where they differ how much
// slower the thorough profile measured the quick one's pick, and whether
// that lies within the thorough profile's own noise ("coin flip": the two
// cells' timed runs overlap, no bench could tell them apart) or beyond it
// ("real"); "?" where a profile predates the spreads.
//
// With an NVIDIA driver it benches the first CUDA device too, after the
// WebGPU adapter in the same lane (usually the same GPU): its rows say
// "cuda_full" next to WebGPU's "gpu_full", and the orchestrator's chooser
// sends each metric and size to the faster of the two. A profile written
// before CUDA was benched still works (CUDA borrows the gpu_* numbers);
// --force measures the CUDA cells at once.
//
// Run it once when a machine (or a container image) is provisioned, or on
// every start: when the profile is fresh it only reads it. For a fleet of
// identical machines, bench one and copy its cache directory: profiles are
// named by a hash of the hardware and re-measured where it differs.
//
// Exit status: 0 success, 1 error, 2 usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	ver "github.com/zenmetrics-go/zenmetrics/internal/version"
	"github.com/zenmetrics-go/zenmetrics/orchestrator"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

type options struct {
	force, json, print, cpuOnly, verbose, version bool
	cacheDir                                      string
	metrics                                       []zenmetrics.Metric
	sides                                         []int
	timeLimit, validity                           time.Duration
	runs                                          int
	runBudget                                     time.Duration
	compareRouting                                string
}

func parse(args []string, stderr io.Writer) (*options, int, bool) {
	o := &options{}
	fs := flag.NewFlagSet("zmwarm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.force, "force", false, "bench even if the profile is fresh")
	fs.BoolVar(&o.json, "json", false, "print the result as JSON")
	fs.BoolVar(&o.print, "print", false, "print the profile's path and contents")
	fs.BoolVar(&o.cpuOnly, "cpu-only", false, "ignore GPUs (a CPU-only profile of its own)")
	fs.BoolVar(&o.verbose, "v", false, "log the bench as it runs")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "profile directory (default: the user cache dir + /zenmetrics)")
	metrics := fs.String("metrics", "", "metrics to bench, comma-separated (default: every one a backend implements)")
	sizes := fs.String("sizes", "", "square image sides to bench, comma-separated (default 512,1024,2048,4096)")
	maxPixels := fs.Int64("max-pixels", imageio.DefaultMaxPixels, "refuse bench sizes of more pixels (side²) than this, as zmscore refuses larger images")
	fs.DurationVar(&o.timeLimit, "time-limit", capability.DefaultBenchTimeLimit, "soft limit of the bench: larger sizes are skipped past it")
	fs.DurationVar(&o.validity, "validity", capability.DefaultCacheValidity, "re-bench a profile older than this")
	fs.IntVar(&o.runs, "runs", 0, "most timed runs per cell (0: the default, 3 on the CPU and 5 on a GPU)")
	fs.DurationVar(&o.runBudget, "run-budget", 0, "a cell stops repeating after this much timed work (0: the default, 250ms)")
	fs.StringVar(&o.compareRouting, "compare-routing", "", "compare the routing of this machine's profile with that of another profile `file` of it (e.g. a thorough bench's)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: zmwarm [flags]\n\n"+
			"Benches this machine once (when its capability profile is missing or stale)\n"+
			"and prints the measured cost of each metric on each backend.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK, false
		}
		return nil, exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "zmwarm: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return nil, exitUsage, false
	}
	if *metrics != "" {
		ms, err := zenmetrics.ParseMetrics(*metrics)
		if err != nil {
			fmt.Fprintln(stderr, "zmwarm:", err)
			return nil, exitUsage, false
		}
		o.metrics = ms
	}
	if *sizes != "" {
		for _, s := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 8 || n > 65536 {
				fmt.Fprintf(stderr, "zmwarm: bad size %q (want a side between 8 and 65536)\n", s)
				return nil, exitUsage, false
			}
			if int64(n)*int64(n) > *maxPixels {
				fmt.Fprintf(stderr, "zmwarm: size %d (%d pixels) exceeds --max-pixels %d\n", n, int64(n)*int64(n), *maxPixels)
				return nil, exitUsage, false
			}
			o.sides = append(o.sides, n)
		}
		slices.Sort(o.sides)
	}
	if o.timeLimit <= 0 || o.validity <= 0 {
		fmt.Fprintln(stderr, "zmwarm: --time-limit and --validity must be positive")
		return nil, exitUsage, false
	}
	if o.runs < 0 || o.runBudget < 0 {
		fmt.Fprintln(stderr, "zmwarm: --runs and --run-budget must not be negative")
		return nil, exitUsage, false
	}
	return o, 0, true
}

// version is the --version line: the shared build-info rule
// (internal/version), plus the profile schema this build reads and writes.
func version() string {
	return fmt.Sprintf("%s profile schema %d", ver.Line("zmwarm"), capability.SchemaVersion)
}

// run is main without the process: testable, and every path returns an
// exit code instead of calling os.Exit.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	opt, code, ok := parse(args, stderr)
	if !ok {
		return code
	}
	if opt.version {
		fmt.Fprintln(stdout, version())
		return exitOK
	}
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "zmwarm: internal error: %v\n%s", v, debug.Stack())
			code = exitError
		}
	}()
	level := slog.LevelWarn
	if opt.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := orchestrator.Config{
		CacheDir:       opt.cacheDir,
		CacheValidity:  opt.validity,
		DisableGPU:     opt.cpuOnly,
		Logger:         log,
		BenchTimeLimit: opt.timeLimit,
		BenchMetrics:   opt.metrics,
		BenchSides:     opt.sides,
		BenchRuns:      opt.runs,
		BenchRunBudget: opt.runBudget,
	}
	o, err := orchestrator.New(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "zmwarm:", err)
		return exitError
	}
	defer o.Close()
	if !opt.json && opt.verbose {
		fmt.Fprintf(stderr, "backends: %s\n", strings.Join(o.Backends(), ", "))
	}
	var res *capability.WarmResult
	if opt.force {
		res, err = o.Bench(ctx)
	} else {
		res, err = o.Warm(ctx)
	}
	if err != nil && (res == nil || res.Profile == nil) {
		fmt.Fprintln(stderr, "zmwarm:", err)
		return exitError
	}
	if opt.json {
		if jerr := writeJSON(stdout, o, res); jerr != nil {
			fmt.Fprintln(stderr, "zmwarm:", jerr)
			return exitError
		}
	} else {
		writeTable(stdout, o, res)
	}
	if opt.compareRouting != "" {
		if cerr := compareRouting(stdout, res.Profile, opt.compareRouting); cerr != nil {
			fmt.Fprintln(stderr, "zmwarm:", cerr)
			return exitError
		}
	}
	if opt.print {
		data, rerr := os.ReadFile(res.Path)
		if rerr != nil {
			fmt.Fprintln(stderr, "zmwarm:", rerr)
			return exitError
		}
		fmt.Fprintf(stdout, "\n# %s\n%s", res.Path, data)
	}
	if err != nil {
		// Measured but not saved (read-only cache): the numbers above
		// are good, the next start will bench again.
		fmt.Fprintln(stderr, "zmwarm:", err)
		return exitError
	}
	return exitOK
}

// row is one line of the output: a measured (metric, backend, size) cell.
type row struct {
	Metric  string  `json:"metric"`
	Backend string  `json:"backend"`
	Side    int     `json:"side,omitempty"`
	Pixels  int64   `json:"pixels"`
	NsPerPx float64 `json:"ns_per_px,omitempty"`
	MPPerS  float64 `json:"mp_per_s,omitempty"`
	VRAMMiB float64 `json:"vram_mib,omitempty"`
	// Spread is the noise of NsPerPx (capability.Sample.Spread).
	Spread float64 `json:"spread,omitempty"`
	Note   string  `json:"note,omitempty"`
}

// rows lists the profile's measurements, plus (after a bench) the cells
// the bench skipped and why, so a missing 4096² is explained. Every class
// the profile holds is listed (Profile.Classes: gpu_full and cuda_full
// side by side, then the strips, then cpu), so CUDA rows appear wherever
// CUDA was benched, and a class a newer build wrote is not hidden.
func rows(p *capability.Profile, res *capability.WarmResult) []row {
	var out []row
	for _, m := range zenmetrics.AllMetrics() {
		for _, c := range p.Classes(m) {
			for _, s := range p.Samples(m, c) {
				r := row{Metric: m.String(), Backend: c, Pixels: s.Pixels, NsPerPx: s.NsPerPx, VRAMMiB: s.VRAMMiB, Spread: s.Spread}
				if side := isqrt(s.Pixels); side*side == s.Pixels {
					r.Side = int(side)
				}
				if s.NsPerPx > 0 {
					r.MPPerS = 1e3 / s.NsPerPx
				}
				out = append(out, r)
			}
		}
		for _, cell := range p.OOMCells(m) {
			out = append(out, row{Metric: m.String(), Backend: cell.Backend, Pixels: cell.Pixels, Note: "out of memory: never tried again"})
		}
	}
	if res != nil && res.Bench != nil {
		for _, b := range res.Bench.Results {
			if b.Unsettled && b.NsPerPx > 0 {
				// A GPU cell timed at the settle cap: its clock may not
				// have ramped, so its number is less sure than the others.
				for i := range out {
					if r := &out[i]; r.Metric == b.Metric.String() && r.Backend == b.Class && r.Pixels == b.Pixels && r.Note == "" {
						r.Note = fmt.Sprintf("GPU clock not settled after %d runs", b.SettleRuns)
					}
				}
			}
			if b.Skipped == "" && b.Err == nil || b.Skipped == "unsupported" {
				continue
			}
			note := b.Skipped
			if b.Err != nil {
				note = "failed: " + b.Err.Error()
			}
			out = append(out, row{Metric: b.Metric.String(), Backend: b.Class, Side: b.Side, Pixels: b.Pixels, Note: note})
		}
	}
	return out
}

func isqrt(n int64) int64 {
	if n <= 0 {
		return 0
	}
	r := int64(1)
	for (r+1)*(r+1) <= n {
		r++
		if r > 1<<20 {
			break
		}
	}
	return r
}

func writeTable(w io.Writer, o *orchestrator.Orchestrator, res *capability.WarmResult) {
	p := res.Profile
	status := "fresh, not re-measured"
	if res.Benched {
		status = "benched (" + string(res.Reason) + ")"
		if res.Reason == "" {
			status = "benched (forced)"
		}
		if res.Bench != nil {
			status += fmt.Sprintf(" in %.1f s", res.Bench.Elapsed.Seconds())
		}
	}
	fmt.Fprintf(w, "profile:  %s\n", res.Path)
	fmt.Fprintf(w, "machine:  %s  cpu %q", p.MachineHash, p.CPU.Brand)
	for _, g := range p.GPUs {
		fmt.Fprintf(w, "  gpu %q driver %s", g.Name, g.Driver)
		if g.InitMs > 0 {
			fmt.Fprintf(w, " init %.0f ms", g.InitMs)
		}
	}
	fmt.Fprintf(w, "\nstatus:   %s; last measured %s\n", status, p.LastValidated.Format(time.RFC3339))
	fmt.Fprintf(w, "backends: %s\n\n", strings.Join(o.Backends(), ", "))
	rs := rows(p, res)
	if len(rs) == 0 {
		fmt.Fprintln(w, "(no measurements: no backend implements the requested metrics)")
		return
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tbackend\tsize\tns/px\tMP/s\tVRAM MiB\tspread\t\t")
	for _, r := range rs {
		size := strconv.FormatInt(r.Pixels, 10) + " px"
		if r.Side > 0 {
			size = fmt.Sprintf("%d²", r.Side)
		}
		ns, mps, vram := "-", "-", "-"
		if r.NsPerPx > 0 {
			ns = fmt.Sprintf("%.2f", r.NsPerPx)
			mps = fmt.Sprintf("%.2f", r.MPPerS)
		}
		if r.VRAMMiB > 0 {
			vram = fmt.Sprintf("%.0f", r.VRAMMiB)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t%s\n", r.Metric, r.Backend, size, ns, mps, vram, plusMinus(r.Spread), r.Note)
	}
	tw.Flush()
	if path := cpuPath(res); path != "" {
		// What the cpu cells timed: one task among the pool's workers,
		// the way a batch runs them, not one task alone.
		fmt.Fprintf(w, "\ncpu cells: %s (ns/px of one task among them)\n", path)
	}
}

// cpuPath is what the bench's cpu cells ran ("" when none ran).
func cpuPath(res *capability.WarmResult) string {
	if res == nil || res.Bench == nil {
		return ""
	}
	for _, b := range res.Bench.Results {
		if b.Class == capability.ClassCPU && b.Path != "" && b.NsPerPx > 0 {
			return b.Path
		}
	}
	return ""
}

func writeJSON(w io.Writer, o *orchestrator.Orchestrator, res *capability.WarmResult) error {
	p := res.Profile
	out := struct {
		Path          string               `json:"path"`
		MachineHash   string               `json:"machine_hash"`
		Benched       bool                 `json:"benched"`
		Reason        string               `json:"reason,omitempty"`
		LastValidated time.Time            `json:"last_validated"`
		BenchSeconds  float64              `json:"bench_seconds,omitempty"`
		Backends      []string             `json:"backends"`
		CPU           capability.CPUInfo   `json:"cpu"`
		GPUs          []capability.GPUInfo `json:"gpus"`
		Rows          []row                `json:"rows"`
		Warning       string               `json:"warning,omitempty"`
		CPUPath       string               `json:"cpu_path,omitempty"`
	}{
		Path: res.Path, MachineHash: p.MachineHash, Benched: res.Benched, Reason: string(res.Reason),
		LastValidated: p.LastValidated, Backends: o.Backends(), CPU: p.CPU, GPUs: p.GPUs, Rows: rows(p, res),
		CPUPath: cpuPath(res),
	}
	if res.Bench != nil {
		out.BenchSeconds = res.Bench.Elapsed.Seconds()
	}
	if res.LoadErr != nil {
		out.Warning = res.LoadErr.Error()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
