// Command zmscore scores distorted images against a reference with a
// perceptual metric (SSIMULACRA2 by default), printing what the reference
// tools print.
//
//	zmscore [--metric ssim2] [--backend auto|cpu] [--json] [--threads N] REF DIST [DIST...]
//	zmscore --metric butteraugli [--intensity-target N] [--pnorm P]
//	        [--distmap MAP.png] [--rawdistmap MAP.pfm] REF DIST [DIST...]
//	zmscore --metric dssim [--distmap MAP.png] [--rawdistmap MAP.pfm] REF DIST [DIST...]
//	zmscore --metric cvvdp [--display NAME] [--distmap MAP.png] [--rawdistmap MAP.pfm] REF DIST [DIST...]
//	zmscore --manifest FILE | --ref-dir DIR --dist-dir DIR  --out FILE [--resume] ...
//	zmscore merge --out FILE [--manifest FILE --metric M] PART...
//	zmscore serve [--listen 127.0.0.1:PORT] [--workers N] [--queue N] ...
//
// The batch modes (manifests, folder pairing, merge) are package batch's;
// `zmscore --help` prints every mode with an example each.
//
// Plain output is one line per DIST, in order: the score as %.8f, or "nan"
// when that DIST failed (its error goes to stderr). --json prints one JSON
// object per DIST instead. Exit status: 0 all scored, 1 an input or scoring
// error (the other DISTs are still scored), 2 a usage error.
//
// For Butteraugli the score is the maximum distance, the first line of
// libjxl's butteraugli_main; --json adds its 3-norm ("pnorm3") and, with
// --pnorm, that p-norm ("pnorm"). --distmap writes butteraugli_main's colour
// heat map as PNG, --rawdistmap the float distance map as PFM, both like
// butteraugli_main --distmap and --rawdistmap.
//
// For DSSIM the score is dssim-core 3.4.0's value, as the dssim tool prints
// it; --distmap writes the first scale's SSIM map coloured as `dssim -o`
// does, --rawdistmap that SSIM map itself (1 = identical) as PFM.
//
// For ColorVideoVDP the score is pycvvdp 0.5.4's JOD for the display model
// --display names (default standard_4k); --rawdistmap writes its "raw"
// heatmap as PFM, --distmap the same map as 8-bit grey.
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
	"os/signal"
	"runtime"
	"strings"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/batch"
	"github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	ver "github.com/zenmetrics-go/zenmetrics/internal/version"
)

// newBackend is openBackend; tests replace it with an instrumented fake.
var newBackend = openBackend

// version may be set at link time (-ldflags "-X main.version=v1.2.3");
// otherwise the build information decides (internal/version).
var version = ""

// versionLine is what --version prints.
func versionLine() string {
	if version != "" {
		return fmt.Sprintf("zmscore %s (%s, %s/%s)", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	return ver.Line("zmscore")
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		// serve handles SIGINT and SIGTERM itself (serve.go): the first
		// finishes the accepted requests, the second cancels them.
		os.Exit(runServe(os.Args[2:], os.Stdin, os.Stdout, os.Stderr, nil))
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command, minus the process: tests call it in-process.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

type options struct {
	metric  zenmetrics.Metric
	backend string
	json    bool
	threads int
	ref     string
	dists   []string
	// maxPixels (--max-pixels) and memBudget (--mem-budget, bytes): see
	// limits.go.
	maxPixels, memBudget int64
	// display is --display (ColorVideoVDP only; "" = its default).
	display string
	// Butteraugli only.
	intensityTarget float64
	pnorm           float64
	// distMaps[i] and rawDistMaps[i] are the output paths for dists[i];
	// nil when not asked for.
	distMaps, rawDistMaps []string
}

// wantMaps reports whether a distance map must be computed.
func (o *options) wantMaps() bool { return o.distMaps != nil || o.rawDistMaps != nil }

// metricOptions are the zenmetrics.Options the command line asks for.
func (o *options) metricOptions() zenmetrics.Options {
	switch o.metric {
	case zenmetrics.DSSIM:
		return zenmetrics.Options{DistMap: o.wantMaps()}
	case zenmetrics.CVVDP:
		return zenmetrics.Options{Display: o.display, DistMap: o.wantMaps()}
	case zenmetrics.Butteraugli:
	default:
		return zenmetrics.Options{}
	}
	return zenmetrics.Options{IntensityTarget: o.intensityTarget, PNorm: o.pnorm, DistMap: o.wantMaps()}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `Usage: zmscore [flags] REF DIST [DIST...]          pair mode (below)
       zmscore --manifest FILE --out FILE [flags]  batch mode: a corpus
       zmscore --ref-dir DIR --dist-dir DIR --out FILE [flags]
       zmscore merge --out FILE [flags] PART...    batch mode: join shards
       zmscore serve [--listen 127.0.0.1:PORT] [flags]  a scoring server
       zmscore --version | --help

Examples:
  One pair (prints one score, %%.8f):
    zmscore ref.png dist.png
  Several DISTs against one reference, prepared once; JSON lines:
    zmscore --json ref.png q20.jpg q50.jpg q80.webp
  Butteraugli with a distance map per DIST:
    zmscore --metric butteraugli --pnorm 6 --distmap maps/{}.png ref.png out/*.png
  A chosen backend (auto, cpu, webgpu, cuda) and thread count:
    zmscore --backend cpu --threads 4 ref.png dist.png
  A corpus from a manifest, crash-safe; after a crash, the same with --resume:
    zmscore --manifest pairs.tsv --metric ssim2,butteraugli --out scores.parquet
    zmscore --manifest pairs.tsv --metric ssim2,butteraugli --out scores.parquet --resume
  A corpus from two folders (NAME__anything.ext paired with NAME__ref.ext):
    zmscore --ref-dir refs/ --dist-dir encoded/ --out scores.jsonl
  Shard outputs joined into one file, checked against the manifest:
    zmscore merge --manifest pairs.tsv --metric ssim2 --out all.parquet scores-shard-*
  A server for target-quality loops: JSON lines on stdin/stdout, references
  kept prepared between requests (zmscore serve --help for the protocol):
    echo '{"id":1,"ref":"ref.png","dist":"dist.png"}' | zmscore serve
    zmscore serve --listen 127.0.0.1:8765 --stdin=false

Pair mode scores each distorted image DIST against the reference image REF
and prints one line per DIST, in order: the score as %%.8f, or "nan" if that
DIST failed (the reason goes to stderr). The reference is prepared once for
all DISTs.

Inputs: PNG (any layout), JPEG, WebP, binary PGM/PPM/PAM (maxval 255 or
65535; 1, 3, 15 scaled to 8 bits). JPEG is decoded bit-exactly as
libjpeg-turbo 2.1 (djpeg, and libjxl's tools) decodes it; CMYK/YCCK JPEGs
are refused, ICC profiles and EXIF orientation are not applied.

Flags (also accepted after the file names):
  --metric NAME    metric to compute (default ssim2)
  --backend NAME   compute backend (default auto)
  --json           one JSON object per DIST: ref, dist, metric, score,
                   backend, ms (and prepare_ms on the first, extras if
                   any, error instead of score on failure)
  --threads N      CPU threads per scoring, 0 = all cores (default 0)
  --cache-dir DIR  accepted as in batch mode, so both take the same flags
                   (one-shot pair mode reads no capability profile)
  --max-pixels N   refuse images whose header declares more pixels
                   (default 2^30, about 1 gigapixel)
  --mem-budget SIZE  memory the decoded pair and CPU scoring may take,
                   e.g. 8GiB (default 3/4 of physical memory or the
                   cgroup limit, at most 9/10 of what is available at
                   start); a larger pair is refused before decoding (CPU
                   Butteraugli and SSIMULACRA2 are scored in strips
                   first)
  --version        print the version and exit
  --help           print this help and exit

Butteraugli (--metric butteraugli; its other flags are usage errors with
other metrics, --distmap and --rawdistmap apply to dssim and cvvdp too):
  The score is the maximum distance, butteraugli_main's first line.
  --json adds "pnorm3" (its "3-norm:" line) and, with --pnorm, "pnorm".
  --intensity-target N  display peak in nits for sRGB 1.0 (default 80)
  --pnorm P        also report the P-norm of the distance map (P > 0)
  --distmap FILE   write butteraugli_main's --distmap colour heat map, as
                   PNG whatever FILE's extension: black, blue, cyan, green
                   up to the "good" distance ~0.72, yellow towards red up
                   to "bad" ~1.16, then magenta, pastels, white (~14)
  --rawdistmap FILE  write the distance map as a grayscale little-endian
                   PFM, as butteraugli_main --rawdistmap does
  With several DISTs, FILE must contain {} or %%s, replaced by each DIST's
  file name without its extension (e.g. --distmap maps/{}.png). A map that
  cannot be written fails its DIST. --json names the files written.

DSSIM (--metric dssim): the score is dssim-core 3.4.0's 1/SSIM-1 value.
  --distmap FILE   write the first scale's SSIM map as RGBA PNG coloured as
                   the dssim tool's -o writes it: red (1-ssim)^2*16, green
                   (1-ssim)*3, blue (1-ssim) relative to the image's average
  --rawdistmap FILE  write that per-pixel SSIM map (1 = identical) as a
                   grayscale little-endian PFM
  FILE templates as for Butteraugli.

ColorVideoVDP (--metric cvvdp): pycvvdp 0.5.4's JOD (10 = identical,
  lower is worse) for an image seen on a display model, called with
  test = DIST and reference = REF. Both sides must be at least 2 px; alpha
  is ignored, grey images take pycvvdp's one-channel path.
  --display NAME   pycvvdp's display model (default standard_4k: a 30-inch
                   4K monitor, 200 cd/m^2, 250 lux, seen from 0.7472 m);
                   the names: %s
  --rawdistmap FILE  write pycvvdp's "raw" heatmap (per pixel 1 - JOD/10 of
                   the differences, 0 = none) as a grayscale PFM
  --distmap FILE   write that map as 8-bit grey PNG (0..1 to 0..255; not
                   pycvvdp's coloured visualisation)
  FILE templates as for Butteraugli.

IW-SSIM (--metric iwssim): piq 0.8.0's information_weighted_ssim with its
  defaults, called with x = DIST and y = REF (1 = identical); colour images
  are reduced to Y = 0.299R+0.587G+0.114B, alpha is ignored. Both sides must
  be at least 161 px. It has no map.

zensim (--metric zensim): zensim 0.2.7's score with its default profile
  (zensim-preview-v0.2): 100 for identical images, lower is worse, below 0
  for extreme distortions. Both sides must be at least 8 px; alpha is
  composited over zensim's noise background. It has no map.

Metrics:
`, strings.Join(cvvdp.DisplayNames(), ", "))
	for _, m := range zenmetrics.AllMetrics() {
		fmt.Fprintf(w, "  %s\n", m)
	}
	fmt.Fprintf(w, "  (aliases: ssimulacra2, ba, iw-ssim, colorvideovdp; a backend may not implement every metric)\n\nBackends:\n")
	for _, b := range backendList {
		fmt.Fprintf(w, "  %-8s %s\n", b.name, b.desc)
	}
	fmt.Fprintf(w, "\nExit status (pair mode): 0 all scored, 1 input or scoring error, 2 usage error.\n\n")
	// The batch modes' own text, whole: one --help shows every mode and
	// every flag, rather than a help that has to be found per mode.
	fmt.Fprint(w, batch.Usage)
}

// parseArgs parses flags anywhere among the file names ("--" ends flags).
// done is true (with code) when the command is finished (help, version,
// usage error).
func parseArgs(args []string, stdout, stderr io.Writer) (opt options, done bool, code int) {
	fs := flag.NewFlagSet("zmscore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	metric := fs.String("metric", "ssim2", "")
	fs.StringVar(&opt.backend, "backend", "auto", "")
	fs.BoolVar(&opt.json, "json", false, "")
	fs.IntVar(&opt.threads, "threads", 0, "")
	fs.String("cache-dir", "", "") // see the help text
	fs.Int64Var(&opt.maxPixels, "max-pixels", imageio.DefaultMaxPixels, "")
	memBudget := fs.String("mem-budget", "", "")
	showVersion := fs.Bool("version", false, "")
	fs.Float64Var(&opt.intensityTarget, "intensity-target", 80, "")
	fs.Float64Var(&opt.pnorm, "pnorm", 0, "")
	distMap := fs.String("distmap", "", "")
	fs.StringVar(&opt.display, "display", "", "")
	rawDistMap := fs.String("rawdistmap", "", "")
	fail := func(format string, a ...any) (options, bool, int) {
		fmt.Fprintf(stderr, "zmscore: "+format+"\n", a...)
		fmt.Fprintf(stderr, "Run 'zmscore --help' for usage.\n")
		return options{}, true, 2
	}
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage(stdout)
				return options{}, true, 0
			}
			return fail("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			files = append(files, rest...)
			break
		}
		files = append(files, rest[0])
		args = rest[1:]
	}
	if *showVersion {
		fmt.Fprintln(stdout, versionLine())
		return options{}, true, 0
	}
	m, err := zenmetrics.ParseMetric(*metric)
	if err != nil {
		return fail("%v", err)
	}
	opt.metric = m
	if opt.threads < 0 {
		return fail("--threads must be 0 (all cores) or more, not %d", opt.threads)
	}
	if err := parseLimits(&opt, *memBudget); err != nil {
		return fail("%v", err)
	}
	if len(files) < 2 {
		return fail("need a reference and at least one distorted image, got %d file name(s)", len(files))
	}
	opt.ref, opt.dists = files[0], files[1:]
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"intensity-target", "pnorm"} {
		if set[name] && opt.metric != zenmetrics.Butteraugli {
			return fail("--%s applies to --metric butteraugli only, not %s", name, opt.metric)
		}
	}
	for _, name := range []string{"distmap", "rawdistmap"} {
		if set[name] && opt.metric != zenmetrics.Butteraugli && opt.metric != zenmetrics.DSSIM && opt.metric != zenmetrics.CVVDP {
			return fail("--%s applies to --metric butteraugli, dssim and cvvdp only, not %s", name, opt.metric)
		}
	}
	if set["display"] {
		if opt.metric != zenmetrics.CVVDP {
			return fail("--display applies to --metric cvvdp only, not %s", opt.metric)
		}
		if _, err := cvvdp.LookupDisplay(opt.display); err != nil || opt.display == "" {
			return fail("--display: unknown display model %q (known: %s)", opt.display, strings.Join(cvvdp.DisplayNames(), ", "))
		}
	}
	if v := opt.intensityTarget; !(v > 0) || math.IsInf(v, 0) {
		return fail("--intensity-target must be a positive number of nits, not %v", v)
	}
	if v := opt.pnorm; set["pnorm"] && (!(v > 0) || math.IsInf(v, 0)) {
		return fail("--pnorm must be a positive number, not %v", v)
	}
	if set["distmap"] {
		if opt.distMaps, err = mapPaths("--distmap", *distMap, opt.dists); err != nil {
			return fail("%v", err)
		}
	}
	if set["rawdistmap"] {
		if opt.rawDistMaps, err = mapPaths("--rawdistmap", *rawDistMap, opt.dists); err != nil {
			return fail("%v", err)
		}
	}
	if err := checkOutputs(files, opt.distMaps, opt.rawDistMaps); err != nil {
		return fail("%v", err)
	}
	return opt, false, 0
}

// result is one output line in --json mode.
type result struct {
	Ref    string   `json:"ref"`
	Dist   string   `json:"dist"`
	Metric string   `json:"metric"`
	Score  *float64 `json:"score,omitempty"`
	// PNorm3 and PNorm repeat Butteraugli's extras at top level.
	PNorm3     *float64           `json:"pnorm3,omitempty"`
	PNorm      *float64           `json:"pnorm,omitempty"`
	DistMap    string             `json:"distmap,omitempty"`
	RawDistMap string             `json:"rawdistmap,omitempty"`
	Backend    string             `json:"backend"`
	Adapter    string             `json:"adapter,omitempty"`
	MS         *float64           `json:"ms,omitempty"`
	PrepareMS  *float64           `json:"prepare_ms,omitempty"`
	Extras     map[string]float64 `json:"extras,omitempty"`
	Error      string             `json:"error,omitempty"`
}

func millis(d time.Duration) *float64 {
	v := math.Round(float64(d.Microseconds())) / 1000
	return &v
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	warnings = stderr
	if batch.IsBatchArgs(args) {
		// Manifests, folder pairing and merge: the batch engine.
		return batch.CLI(ctx, args, stdout, stderr, batch.Deps{OpenBackend: func(o batch.BackendOptions) (zenmetrics.Backend, error) {
			return newBackend(o.Name, o.Threads)
		}, HasCUDA: hasCUDA})
	}
	opt, done, code := parseArgs(args, stdout, stderr)
	if done {
		return code
	}
	backend, err := newBackend(opt.backend, opt.threads)
	if err != nil {
		fmt.Fprintf(stderr, "zmscore: %v\n", err)
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "Run 'zmscore --help' for usage.\n")
			return 2
		}
		return 1
	}
	defer backend.Close()

	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	failed := false
	emit := func(r result, err error) {
		if err != nil {
			failed = true
			r.Score, r.Extras, r.PNorm3, r.PNorm = nil, nil, nil, nil
			r.DistMap, r.RawDistMap = "", ""
			r.Error = err.Error()
			fmt.Fprintf(stderr, "zmscore: %s\n", describeErr(r.Dist, err))
		}
		if opt.json {
			if e := enc.Encode(r); e != nil {
				fmt.Fprintf(stderr, "zmscore: writing output: %v\n", e)
				failed = true
			}
			return
		}
		if r.Score == nil {
			fmt.Fprintln(stdout, "nan")
		} else {
			fmt.Fprintf(stdout, "%.8f\n", *r.Score)
		}
	}
	base := result{Ref: opt.ref, Metric: opt.metric.String(), Backend: backend.Name()}

	// Decoding the DISTs starts at once, beside the reference, and runs at
	// most `ahead` images in front of the scoring.
	// Both headers are read and checked (size, minimum size, predicted
	// memory) before either image is decoded.
	lim := newPairLimits(&opt, backend)
	defer lim.close()
	refErr := lim.checkRef()
	dists := startDecoding(ctx, opt.dists, 2, lim.decodeDist)

	err = refErr
	var ref *zenmetrics.Image
	// When every DIST is refused from its header (size mismatch, not an
	// image), the reference is not decoded at all.
	noneFits := err == nil && !lim.anyDistFits()
	if err == nil && !noneFits {
		ref, err = imageio.DecodeFileOptions(opt.ref, lim.imOpt)
	}
	var prepared zenmetrics.Reference
	var prepareTime time.Duration
	if err == nil && !noneFits {
		t0 := time.Now()
		prepared, err = prepareRef(ctx, backend, &opt, ref)
		prepareTime = time.Since(t0)
	}
	if err != nil {
		// Nothing can be scored; every DIST gets the reference's error.
		fmt.Fprintf(stderr, "zmscore: reference: %s\n", describeErr(opt.ref, err))
		for _, d := range dists {
			r := base
			r.Dist = d.path
			<-d.done
			d.release()
			failed = true
			r.Error = "reference: " + describeErr(opt.ref, err)
			if opt.json {
				enc.Encode(r)
			} else {
				fmt.Fprintln(stdout, "nan")
			}
		}
		return 1
	}
	if prepared != nil {
		defer prepared.Release()
	}
	// The backend that really prepared the reference (auto may have sent
	// it to the CPU) and, for WebGPU, the adapter.
	base.Backend = backendOf(backend, prepared)
	base.Adapter = adapterOf(backend, base.Backend)

	for i, d := range dists {
		r := base
		r.Dist = d.path
		if i == 0 {
			r.PrepareMS = millis(prepareTime)
		}
		<-d.done
		if d.err != nil {
			d.release()
			emit(r, d.err)
			continue
		}
		if err := zenmetrics.CheckSameSize(ref, d.img); err != nil {
			d.release()
			emit(r, err)
			continue
		}
		t0 := time.Now()
		s, err := scoreSafely(ctx, prepared, d.img)
		r.MS = millis(time.Since(t0))
		d.release()
		if err == nil && (math.IsNaN(s.Value) || math.IsInf(s.Value, 0)) {
			err = fmt.Errorf("metric returned %v", s.Value)
		}
		if err == nil {
			v := s.Value
			r.Score = &v
			if len(s.Extras) > 0 {
				r.Extras = s.Extras
			}
			switch opt.metric {
			case zenmetrics.Butteraugli:
				err = butteraugliOutputs(&r, s, &opt, i, ref)
			case zenmetrics.DSSIM:
				err = mapOutputs(&r, s, &opt, i, ref, imageio.DSSIMMapImage)
			case zenmetrics.CVVDP:
				err = mapOutputs(&r, s, &opt, i, ref, greyMap)
			}
		}
		emit(r, err)
	}
	if failed {
		return 1
	}
	return 0
}

// oncePreparer is a backend that can prepare a reference for exactly one
// distorted image more cheaply than for many (cpu.Backend: SSIMULACRA2
// then scores the pair in one pass, without the reference's pyramid).
type oncePreparer interface {
	PrepareOnce(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error)
}

// prepareRef prepares the reference, with PrepareOnce when there is one
// DIST and the backend has it; the scores are the same either way.
func prepareRef(ctx context.Context, backend zenmetrics.Backend, opt *options, ref *zenmetrics.Image) (zenmetrics.Reference, error) {
	if po, ok := backend.(oncePreparer); ok && len(opt.dists) == 1 {
		return po.PrepareOnce(ctx, opt.metric, ref, opt.metricOptions())
	}
	return backend.Prepare(ctx, opt.metric, ref, opt.metricOptions())
}

// scoreSafely keeps a backend panic from taking the other DISTs down.
func scoreSafely(ctx context.Context, r zenmetrics.Reference, dist *zenmetrics.Image) (s zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	return r.Score(ctx, dist)
}

func isInputErr(err error) bool {
	var ie *zenmetrics.InputError
	return errors.As(err, &ie)
}

// describeErr names the file unless the error already does.
func describeErr(path string, err error) string {
	if isInputErr(err) || strings.HasPrefix(err.Error(), path+":") {
		return err.Error()
	}
	return path + ": " + err.Error()
}

// pending is one DIST being decoded in the background.
type pending struct {
	path    string
	img     *zenmetrics.Image
	err     error
	done    chan struct{}
	release func()
}

// startDecoding decodes paths in order on one goroutine, keeping at most
// ahead decoded images that have not been released (scored) yet, so memory
// stays bounded however many DISTs there are.
func startDecoding(ctx context.Context, paths []string, ahead int, decode func(string) (*zenmetrics.Image, error)) []*pending {
	slots := make(chan struct{}, ahead)
	out := make([]*pending, len(paths))
	for i, p := range paths {
		d := &pending{path: p, done: make(chan struct{})}
		d.release = func() {
			d.img = nil
			<-slots
		}
		out[i] = d
	}
	go func() {
		for _, d := range out {
			slots <- struct{}{}
			if err := ctx.Err(); err != nil {
				d.err = err
			} else {
				d.img, d.err = decode(d.path)
			}
			close(d.done)
		}
	}()
	return out
}
