// Command zmbench times the WebGPU SSIMULACRA2 backend on seeded photo-like
// image pairs (never flat or zero images) and prints a markdown table; with
// -json it also writes the numbers to a file.
//
// For each size: warm milliseconds per distorted image with a cached
// (prepared) reference and one-shot (prepare + score + release), median of
// -reps runs after -warmup runs; megapixels per second; the device memory
// of a prepared reference (pool accounting) and, where NVML is present, the
// GPU's used memory at its peak; the bytes the kernels move per image
// (ssim2gpu.BytesPerPixel, an upper bound) and the bandwidth that
// implies. Then the upload bandwidth of each upload path.
//
//	zmbench --sizes 1,4,16 --reps 20 --json out.json
//
// With --strips it compares full-image and strip scoring instead (strips.go):
//
//	zmbench --strips --strip-metric butteraugli --sizes 16,64 --reps 5 --warmup 1 --vram-budget-mib 2048
//
// `zmbench --help` lists every flag with examples.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
	"github.com/zenmetrics-go/zenmetrics/cpu/dssim"
	"github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
	"github.com/zenmetrics-go/zenmetrics/gpu/nvml"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	bagpu "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/butteraugli"
	dssimgpu "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/dssim"
	ssim2gpu "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/ssim2"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	ver "github.com/zenmetrics-go/zenmetrics/internal/version"
)

type sizeResult struct {
	Megapixels    float64 `json:"megapixels"`
	Width         int     `json:"width"`
	Height        int     `json:"height"`
	Score         float64 `json:"score"`
	CPUScore      float64 `json:"cpu_score,omitempty"`
	CachedMS      float64 `json:"cached_ms_median"`
	CachedMinMS   float64 `json:"cached_ms_min"`
	OneShotMS     float64 `json:"one_shot_ms_median"`
	PrepareMS     float64 `json:"prepare_ms_median"`
	CachedMPs     float64 `json:"cached_mp_per_s"`
	RefBytes      int64   `json:"reference_bytes"`
	NVMLPeakUsed  uint64  `json:"nvml_peak_used_bytes,omitempty"`
	BytesPerImage float64 `json:"kernel_bytes_per_image"`
	ImpliedGBs    float64 `json:"implied_gb_per_s"`
	// Profile is the median GPU time of each dispatch (one timed pass
	// each), milliseconds, in recording order; with -profile.
	Profile []passMS `json:"profile,omitempty"`
}

type passMS struct {
	Label string  `json:"label"`
	MS    float64 `json:"ms"`
}

type report struct {
	Metric      string             `json:"metric"`
	Backend     webgpu.BackendInfo `json:"backend"`
	FMA         string             `json:"fma"`
	Reps        int                `json:"reps"`
	Sizes       []sizeResult       `json:"sizes"`
	UploadBytes int64              `json:"upload_bytes"`
	WriteBuffer float64            `json:"upload_writebuffer_gb_per_s"`
	Mapped      float64            `json:"upload_mapped_staging_gb_per_s"`
	Date        string             `json:"date"`
}

// usageText is the --help text; it names every flag newFlags defines (the
// test checks that).
const usageText = `Usage: zmbench [flags]

Times the WebGPU backend on seeded photo-like image pairs and prints a
markdown table per size: warm ms per distorted image against a prepared
reference, one-shot ms (prepare + score + release), MP/s, the reference's
device memory, NVIDIA's used memory at its peak where NVML is present, the
kernels' bytes per image and the bandwidth that implies; then the upload
bandwidth of each upload path. Needs a WebGPU runtime (see zmprobe).

Examples:
  zmbench                                   SSIMULACRA2 at 1, 4 and 16 MP
  zmbench --sizes 1,4,16 --reps 20 --json out.json
  zmbench --metric butteraugli --sizes 4 --cpu     also the CPU score, side by side
  zmbench --profile --sizes 16              GPU time of every dispatch, per kernel
  zmbench --strips --strip-metric butteraugli --sizes 16,64 --reps 5 --warmup 1 --vram-budget-mib 2048
                                            full image vs strips: ms, VRAM, score difference
  zmbench --strips --strip-runtime cuda --strip-metric dssim --sizes 16,64 --reps 5 --warmup 1
                                            the same on CUDA

Flags:
  --sizes LIST          comma-separated sizes in megapixels, square images,
                        1 MP = 1024x1024 (default 1,4,16)
  --reps N              timed runs per measurement, median reported (default 20)
  --warmup N            untimed runs first (default 3)
  --json FILE           also write the results as JSON to FILE
  --metric NAME         ssim2, butteraugli or dssim (default ssim2); the byte
                        model: SSIMULACRA2's and DSSIM's only
  --cpu                 also score each pair with the CPU reference (slow)
  --upload-mib N        bytes per upload-bandwidth measurement, MiB (default 64)
  --profile             also time every dispatch in its own pass (median of
                        --reps) and print a per-kernel table
  --strips              instead: full image vs strips at each size
  --strip-metric NAME   with --strips: butteraugli (default), ssim2 or dssim
  --strip-runtime NAME  with --strips: webgpu (default) or cuda (device 0)
  --vram-budget-mib N   with --strips: VRAM budget of the strip runs, MiB
                        (0: the device's free memory; also $` + webgpu.EnvVRAMBudget + `)
  --version             print the version and exit
  --help                print this help and exit

Exit status: 0 done, 1 a measurement failed, 2 usage error.
`

type options struct {
	sizes, jsonPath, metric, stripMetric, stripRuntime string
	reps, warmup, upMiB                                int
	cpu, profile, strips, version                      bool
	budgetMiB                                          int64
}

// newFlags defines zmbench's flags on a fresh set.
func newFlags(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("zmbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.sizes, "sizes", "1,4,16", "")
	fs.IntVar(&o.reps, "reps", 20, "")
	fs.IntVar(&o.warmup, "warmup", 3, "")
	fs.StringVar(&o.jsonPath, "json", "", "")
	fs.BoolVar(&o.cpu, "cpu", false, "")
	fs.IntVar(&o.upMiB, "upload-mib", 64, "")
	fs.StringVar(&o.metric, "metric", "ssim2", "")
	fs.BoolVar(&o.profile, "profile", false, "")
	fs.BoolVar(&o.strips, "strips", false, "")
	fs.StringVar(&o.stripMetric, "strip-metric", "butteraugli", "")
	fs.StringVar(&o.stripRuntime, "strip-runtime", "webgpu", "")
	fs.Int64Var(&o.budgetMiB, "vram-budget-mib", 0, "")
	fs.BoolVar(&o.version, "version", false, "")
	return fs
}

// parse reads the command line; done is true when the command is finished
// (help, version or a usage error) with exit status code.
func parse(args []string, stdout, stderr io.Writer) (o options, m zenmetrics.Metric, done bool, code int) {
	fs := newFlags(&o)
	fail := func(format string, a ...any) (options, zenmetrics.Metric, bool, int) {
		fmt.Fprintf(stderr, "zmbench: "+format+"\nRun 'zmbench --help' for usage.\n", a...)
		return o, m, true, 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return o, m, true, 0
		}
		return fail("%v", err)
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if o.version {
		fmt.Fprintln(stdout, ver.Line("zmbench"))
		return o, m, true, 0
	}
	var err error
	m, err = zenmetrics.ParseMetric(o.metric)
	if err != nil || (m != zenmetrics.SSIMULACRA2 && m != zenmetrics.Butteraugli && m != zenmetrics.DSSIM) {
		return fail("--metric %q: want ssim2, butteraugli or dssim", o.metric)
	}
	if o.stripRuntime != "webgpu" && o.stripRuntime != "cuda" {
		return fail("--strip-runtime %q: want webgpu or cuda", o.stripRuntime)
	}
	if o.reps < 1 || o.warmup < 0 || o.upMiB < 1 || o.budgetMiB < 0 {
		return fail("--reps must be at least 1, --warmup and --vram-budget-mib at least 0, --upload-mib at least 1")
	}
	return o, m, false, 0
}

func main() {
	o, m, done, code := parse(os.Args[1:], os.Stdout, os.Stderr)
	if done {
		os.Exit(code)
	}
	metric, profile = m, o.profile
	if o.strips {
		if err := runStrips(o.sizes, o.stripMetric, o.stripRuntime, o.budgetMiB, o.reps, o.warmup, o.jsonPath); err != nil {
			fmt.Fprintln(os.Stderr, "zmbench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o.sizes, o.reps, o.warmup, o.jsonPath, o.cpu, o.upMiB); err != nil {
		fmt.Fprintln(os.Stderr, "zmbench:", err)
		os.Exit(1)
	}
}

var (
	profile bool
	metric  = zenmetrics.SSIMULACRA2
)

func median(d []time.Duration) (med, lo float64) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[len(d)/2].Microseconds()) / 1000, float64(d[0].Microseconds()) / 1000
}

func run(sizeList string, reps, warmup int, jsonPath string, withCPU bool, upMiB int) error {
	ctx := context.Background()
	b, err := webgpu.NewBackend(ctx, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	var nv *nvml.Device
	if lib, err := nvml.Open(); err == nil {
		defer lib.Close()
		nv, _ = lib.Device(0)
	}
	rep := report{Metric: metric.String(), Backend: b.Info(), Reps: reps, Date: time.Now().UTC().Format(time.RFC3339)}
	for _, f := range strings.Split(sizeList, ",") {
		mp, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || mp <= 0 {
			return fmt.Errorf("bad size %q", f)
		}
		side := int(math.Round(math.Sqrt(mp * 1024 * 1024)))
		ref, dist := metrictest.SyntheticPair(side, side, 42)
		r, err := timeSize(ctx, b, nv, ref, dist, reps, warmup)
		if err != nil {
			return fmt.Errorf("%g MP: %w", mp, err)
		}
		r.Megapixels = mp
		if withCPU {
			if metric == zenmetrics.Butteraugli {
				res, err := butteraugli.Compare(ref, dist, butteraugli.Config{})
				if err != nil {
					return err
				}
				r.CPUScore = res.Max
			} else if metric == zenmetrics.DSSIM {
				if r.CPUScore, _, err = dssim.Compare(ref, dist, dssim.Config{}); err != nil {
					return err
				}
			} else if r.CPUScore, err = ssim2.Score(ref, dist, ssim2.Config{}); err != nil {
				return err
			}
		}
		rep.Sizes = append(rep.Sizes, r)
	}
	rep.FMA = ssim2gpu.FMAMode(b)
	if metric == zenmetrics.DSSIM {
		rep.FMA = dssimgpu.FMAMode(b)
	}
	rep.UploadBytes = int64(upMiB) << 20
	if rep.WriteBuffer, rep.Mapped, err = b.UploadBandwidth(ctx, rep.UploadBytes, max(3, reps/2)); err != nil {
		return err
	}
	printTable(rep, withCPU)
	if profile {
		printProfile(rep)
	}
	if jsonPath != "" {
		out, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(jsonPath, append(out, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func timeSize(ctx context.Context, b *webgpu.Backend, nv *nvml.Device, ref, dist *zenmetrics.Image, reps, warmup int) (sizeResult, error) {
	res := sizeResult{Width: ref.Width, Height: ref.Height}
	var peak uint64
	sample := func() {
		if nv != nil {
			if m, err := nv.Memory(); err == nil && m.Used > peak {
				peak = m.Used
			}
		}
	}
	r, err := b.Prepare(ctx, metric, ref, zenmetrics.Options{})
	if err != nil {
		return res, err
	}
	res.RefBytes = webgpu.ReferenceBytes(r)
	var cached []time.Duration
	trace := os.Getenv("ZMBENCH_TRACE") != ""
	// Warm up for at least a second as well as -warmup scores: an idle GPU
	// runs at a low clock for the first few hundred milliseconds of work
	// (H200: 435 MHz for ~0.3 s, then 1980 MHz), which would otherwise land
	// in the timed scores of a large image.
	for t0 := time.Now(); time.Since(t0) < time.Second; {
		if _, err := r.Score(ctx, dist); err != nil {
			r.Release()
			return res, err
		}
	}
	for i := 0; i < warmup+reps; i++ {
		u0 := b.UploadStats()
		t0 := time.Now()
		s, err := r.Score(ctx, dist)
		if err != nil {
			r.Release()
			return res, err
		}
		if i >= warmup {
			cached = append(cached, time.Since(t0))
		}
		if trace {
			u1 := b.UploadStats()
			fmt.Fprintf(os.Stderr, "trace %dx%d cached rep %d: %.3f ms (upload %.3f ms)\n", ref.Width, ref.Height, i,
				float64(time.Since(t0).Microseconds())/1000, float64((u1.Total-u0.Total).Microseconds())/1000)
		}
		res.Score = s.Value
		sample()
	}
	if profile && (metric == zenmetrics.SSIMULACRA2 || metric == zenmetrics.DSSIM || metric == zenmetrics.Butteraugli) {
		if res.Profile, err = passProfile(ctx, r, dist, reps); err != nil {
			r.Release()
			return res, err
		}
	}
	r.Release()
	var once, prep []time.Duration
	for i := 0; i < warmup+reps; i++ {
		t0 := time.Now()
		r, err := b.Prepare(ctx, metric, ref, zenmetrics.Options{})
		if err != nil {
			return res, err
		}
		t1 := time.Now()
		_, err = r.Score(ctx, dist)
		r.Release()
		if err != nil {
			return res, err
		}
		if i >= warmup {
			once = append(once, time.Since(t0))
			prep = append(prep, t1.Sub(t0))
		}
		sample()
	}
	res.CachedMS, res.CachedMinMS = median(cached)
	res.OneShotMS, _ = median(once)
	res.PrepareMS, _ = median(prep)
	px := float64(ref.Width) * float64(ref.Height)
	res.CachedMPs = px / 1e6 / (res.CachedMS / 1000)
	switch metric {
	case zenmetrics.SSIMULACRA2:
		res.BytesPerImage = ssim2gpu.BytesPerPixel(ref.Width, ref.Height, ref.Format.BytesPerPixel()) * px
	case zenmetrics.DSSIM:
		res.BytesPerImage = dssimgpu.BytesPerPixel(ref.Width, ref.Height, ref.Format.BytesPerPixel()) * px
	}
	if res.BytesPerImage > 0 {
		res.ImpliedGBs = res.BytesPerImage / (res.CachedMS / 1000) / 1e9
	}
	res.NVMLPeakUsed = peak
	return res, nil
}

func printTable(rep report, withCPU bool) {
	bi := rep.Backend
	fmt.Printf("## %s on %s (%s, %s), FMA %s, median of %d, %s\n\n", rep.Metric, bi.Adapter, bi.Backend, bi.Type, rep.FMA, rep.Reps, rep.Date)
	hdr := "| size | score | cached ms | min ms | one-shot ms | prepare ms | MP/s (cached) | ref MiB | NVML peak MiB | kernel GB/image | implied GB/s |"
	sep := "|---|---|---|---|---|---|---|---|---|---|---|"
	if withCPU {
		hdr += " CPU score |"
		sep += "---|"
	}
	fmt.Println(hdr)
	fmt.Println(sep)
	for _, s := range rep.Sizes {
		nv := "n/a"
		if s.NVMLPeakUsed > 0 {
			nv = fmt.Sprintf("%.0f", float64(s.NVMLPeakUsed)/(1<<20))
		}
		line := fmt.Sprintf("| %dx%d (%g MP) | %.6f | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %s | %.2f | %.0f |",
			s.Width, s.Height, s.Megapixels, s.Score, s.CachedMS, s.CachedMinMS, s.OneShotMS, s.PrepareMS,
			s.CachedMPs, float64(s.RefBytes)/(1<<20), nv, s.BytesPerImage/1e9, s.ImpliedGBs)
		if withCPU {
			line += fmt.Sprintf(" %.6f |", s.CPUScore)
		}
		fmt.Println(line)
	}
	fmt.Printf("\nUpload of %d MiB: queue.writeBuffer %.2f GB/s, mapped staging buffer (create+map+copy) %.2f GB/s\n",
		rep.UploadBytes>>20, rep.WriteBuffer, rep.Mapped)
	if rep.Metric == zenmetrics.SSIMULACRA2.String() {
		fmt.Println("\nByte model (upper bound, every load/store counted once per thread request): ssim2gpu.BytesPerPixel.")
	} else if rep.Metric == zenmetrics.DSSIM.String() {
		fmt.Println("\nscore = DSSIM; byte model (every load/store counted once, tile aprons once): dssimgpu.BytesPerPixel.")
	} else {
		fmt.Println("\nscore = max distance; no byte model for this metric (kernel GB columns are 0).")
	}
}

// passProfile runs the metric's PassProfile (ssim2gpu, dssimgpu, bagpu)
// reps times and returns each pass's median time.
func passProfile(ctx context.Context, r zenmetrics.Reference, dist *zenmetrics.Image, reps int) ([]passMS, error) {
	var runs [][]webgpu.PassTime
	for i := 0; i < reps+1; i++ {
		profileFn := ssim2gpu.PassProfile
		switch metric {
		case zenmetrics.DSSIM:
			profileFn = dssimgpu.PassProfile
		case zenmetrics.Butteraugli:
			profileFn = bagpu.PassProfile
		}
		pt, err := profileFn(ctx, r, dist)
		if err != nil || pt == nil {
			return nil, err
		}
		if i > 0 {
			runs = append(runs, pt)
		}
	}
	out := make([]passMS, len(runs[0]))
	for j := range out {
		v := make([]float64, len(runs))
		for i := range runs {
			v[i] = runs[i][j].DurationNS / 1e6
		}
		sort.Float64s(v)
		out[j] = passMS{Label: runs[0][j].Label, MS: v[len(v)/2]}
	}
	return out, nil
}

// printProfile prints, per size, the GPU milliseconds of each kernel summed
// over channels, per scale, and in total.
func printProfile(rep report) {
	for _, s := range rep.Sizes {
		if len(s.Profile) == 0 {
			continue
		}
		fmt.Printf("\n### Per-dispatch GPU time, %dx%d (median of %d, ms; summed over channels)\n\n", s.Width, s.Height, rep.Reps)
		type key struct{ kernel, scale string }
		sums := map[key]float64{}
		var kernels, scales []string
		seenK, seenS := map[string]bool{}, map[string]bool{}
		total := 0.0
		for _, p := range s.Profile {
			f := strings.Fields(p.Label)
			k, sc := f[0], "-"
			if len(f) > 1 {
				sc = f[1]
			}
			if !seenK[k] {
				seenK[k] = true
				kernels = append(kernels, k)
			}
			if !seenS[sc] {
				seenS[sc] = true
				scales = append(scales, sc)
			}
			sums[key{k, sc}] += p.MS
			total += p.MS
		}
		fmt.Printf("| kernel | %s | total |\n|---|", strings.Join(scales, " | "))
		for range scales {
			fmt.Print("---|")
		}
		fmt.Println("---|")
		for _, k := range kernels {
			line := "| " + k + " |"
			kt := 0.0
			for _, sc := range scales {
				line += fmt.Sprintf(" %.3f |", sums[key{k, sc}])
				kt += sums[key{k, sc}]
			}
			fmt.Printf("%s %.3f |\n", line, kt)
		}
		fmt.Printf("\nSum of timed passes: %.3f ms (cached score %.2f ms)\n", total, s.CachedMS)
	}
}
