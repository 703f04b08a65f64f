// Package metrictest is the test suite every backend runs for every metric
// it supports, in the style of gonum's testlapack: a backend's own test
// calls Run with the metric and the tolerances that hold for it, and gets
// golden-score parity, agreement with a reference backend, determinism and
// the error contract checked the same way as every other backend.
//
// Golden scores come from the repository's testdata/tiny (always present)
// and from the shared corpus and reference vectors (../shared), which are
// skipped cleanly when absent. Images are decoded with package imageio.
package metrictest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// Tolerances are the largest absolute score differences a backend accepts.
type Tolerances struct {
	// Golden bounds |score − reference tool's score| on the tiny and real
	// corpora, and on reference-vector rows that carry a locally computed
	// reference-tool value (those rows are also held to their own
	// published tolerance).
	Golden float64
	// GoldenRel, when above zero, also accepts a golden difference up to
	// GoldenRel × |reference tool's score| (for metrics whose scores span
	// orders of magnitude, such as Butteraugli distances).
	GoldenRel float64
	// Reference bounds |score − Config.Reference's score| on fresh
	// synthetic and real images. 0 demands identical values.
	Reference float64
}

// Config says what Run checks besides the backend and metric.
type Config struct {
	Tol Tolerances
	// Reference is the backend fresh images are compared with (normally the
	// CPU reference); nil skips that comparison.
	Reference zenmetrics.Backend
	// Options are passed to every Prepare.
	Options zenmetrics.Options
	// Tiny is an image size the metric must refuse with ErrBadInput
	// (0: 4, below every metric's minimum).
	Tiny int
	// NoMinSize says the metric has no minimum size (its reference tool
	// scores a 1×1 image, as dssim-core does); Errors then checks that
	// Tiny×Tiny, 64×Tiny and 1×1 images are scored, not refused.
	NoMinSize bool
	// MinSide is the metric's smallest accepted width and height when it
	// is above the suite's own synthetic sizes (IW-SSIM: 161). Errors,
	// Determinism and Concurrent then make their images at least this
	// large, and VsReference leaves out the smaller cases.
	MinSide int
	// SkipCorpus leaves out the large shared corpus (it still runs the tiny
	// corpus and the reference vectors). Run also leaves it out under
	// `go test -short`.
	SkipCorpus bool
}

// side is n raised to the metric's minimum side.
func (c Config) side(n int) int { return max(n, c.MinSide) }

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, cfg Config) {
	t.Run("Errors", func(t *testing.T) { Errors(t, b, m, cfg) })
	t.Run("Determinism", func(t *testing.T) { Determinism(t, b, m, cfg) })
	t.Run("Concurrent", func(t *testing.T) { Concurrent(t, b, m, cfg) })
	t.Run("VsReference", func(t *testing.T) { VsReference(t, b, m, cfg) })
	t.Run("GoldenTiny", func(t *testing.T) { GoldenTiny(t, b, m, cfg) })
	t.Run("GoldenRefvectors", func(t *testing.T) { GoldenRefvectors(t, b, m, cfg) })
	t.Run("GoldenJPEG", func(t *testing.T) { GoldenJPEG(t, b, m, cfg) })
	t.Run("GoldenCorpus", func(t *testing.T) {
		if cfg.SkipCorpus || testing.Short() {
			t.Skip("large corpus left out (-short or Config.SkipCorpus)")
		}
		GoldenCorpus(t, b, m, cfg)
	})
}

// goldenSource says where a metric's reference-tool scores are.
type goldenSource struct {
	table    string // file in testdata/tiny and shared/corpus
	column   string // its score column
	refvec   string // expected.tsv under shared/refvectors ("" if none)
	refTight string // column in refvec holding the reference tool's own value
	// refArg and distArg, when set, are the refvec columns naming the
	// images to prepare and to score, where the reference tool's call order
	// differs from the ref/dist convention (piq's IW-SSIM test passes the
	// reference first in one row and second in the other).
	refArg, distArg string
	// extras maps a Score.Extras key to the corpus column holding the
	// reference tool's value for it; checked when the backend reports it.
	extras map[string]string
}

var goldenSources = map[zenmetrics.Metric]goldenSource{
	zenmetrics.SSIMULACRA2: {table: "scores.tsv", column: "ssimulacra2", refvec: "ssimulacra2/expected.tsv", refTight: "libjxl_v0.12.0_ssimulacra2"},
	zenmetrics.Butteraugli: {table: "scores.tsv", column: "butteraugli_max", refvec: "butteraugli/expected.tsv", refTight: "libjxl_v0.12.0_max",
		extras: map[string]string{"pnorm3": "butteraugli_3norm"}},
	zenmetrics.DSSIM: {table: "scores_dssim.tsv", column: "dssim", refvec: "dssim/expected.tsv"},
	zenmetrics.IWSSIM: {table: "scores_cvvdp_iwssim.tsv", column: "iwssim", refvec: "iwssim/expected.tsv", refTight: "piq0.8.0_float64_local",
		refArg: "piq_y_arg", distArg: "piq_x_arg"},
	zenmetrics.CVVDP: {table: "scores_cvvdp_iwssim.tsv", column: "cvvdp_jod", refvec: "cvvdp/expected.tsv"},
}

// withinGolden reports whether got is within the golden tolerances of want.
func (tol Tolerances) withinGolden(got, want float64) bool {
	d := math.Abs(got - want)
	return d <= tol.Golden || (tol.GoldenRel > 0 && d <= tol.GoldenRel*math.Abs(want))
}

func (tol Tolerances) String() string {
	if tol.GoldenRel > 0 {
		return fmt.Sprintf("abs %g or rel %g", tol.Golden, tol.GoldenRel)
	}
	return fmt.Sprintf("abs %g", tol.Golden)
}

// Parity accumulates |Δ| against reference values for a summary line.
type Parity struct {
	Name     string
	N        int
	MaxDelta float64
	Worst    string
	Got      float64
	Want     float64
}

// Add records one comparison.
func (p *Parity) Add(pair string, got, want float64) {
	p.N++
	d := math.Abs(got - want)
	if d > p.MaxDelta || p.Worst == "" || math.IsNaN(d) {
		p.MaxDelta, p.Worst, p.Got, p.Want = d, pair, got, want
	}
}

// Log prints the summary.
func (p *Parity) Log(t testing.TB) {
	t.Helper()
	if p.N == 0 {
		t.Logf("parity %s: no pairs", p.Name)
		return
	}
	t.Logf("parity %s: %d pairs, max |Δ| = %.3g (worst %s: got %.8f, want %.8f)",
		p.Name, p.N, p.MaxDelta, p.Worst, p.Got, p.Want)
}

// GoldenTiny checks the backend against the reference tool's scores on
// testdata/tiny, which is always present.
func GoldenTiny(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, cfg Config) {
	src, ok := goldenSources[m]
	if !ok {
		t.Skipf("no golden scores known for %v", m)
	}
	dir := shared.Testdata(t, "tiny")
	golden(t, b, m, cfg, "tiny", dir, filepath.Join(dir, src.table), src)
}

// GoldenCorpus checks the backend against the reference tool's scores on
// the shared real-photo corpus (skipped when absent).
func GoldenCorpus(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, cfg Config) {
	src, ok := goldenSources[m]
	if !ok {
		t.Skipf("no golden scores known for %v", m)
	}
	dir := shared.Dir(t, "corpus")
	golden(t, b, m, cfg, "corpus", dir, filepath.Join(dir, src.table), src)
}

// golden scores every row of a corpus table (ref and dist paths relative
// to dir), preparing each reference once.
func golden(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, cfg Config, name, dir, table string, src goldenSource) {
	column := src.column
	tab, err := shared.ReadTSV(table)
	if err != nil {
		if os.IsNotExist(err) {
			t.Skipf("no %s", table)
		}
		t.Fatal(err)
	}
	if !tab.Has(column) {
		t.Skipf("%s has no column %q", table, column)
	}
	par := Parity{Name: fmt.Sprintf("%v %s vs reference tool", m, name)}
	extra := map[string]*Parity{}
	byRef := map[string][]int{}
	var refs []string
	for i := range tab.Rows {
		r := tab.Get(i, "ref")
		if _, seen := byRef[r]; !seen {
			refs = append(refs, r)
		}
		byRef[r] = append(byRef[r], i)
	}
	for _, refPath := range refs {
		ref := load(t, dir, refPath)
		pr, err := b.Prepare(context.Background(), m, ref, cfg.Options)
		if err != nil {
			t.Fatalf("%s: Prepare: %v", refPath, err)
		}
		for _, i := range byRef[refPath] {
			want, err := tab.Float(i, column)
			if err != nil {
				t.Errorf("row %d: %v", i+1, err)
				continue
			}
			distPath := tab.Get(i, "dist")
			got, err := pr.Score(context.Background(), load(t, dir, distPath))
			if err != nil {
				t.Errorf("%s vs %s: %v", refPath, distPath, err)
				continue
			}
			pair := refPath + " vs " + distPath
			par.Add(pair, got.Value, want)
			if !cfg.Tol.withinGolden(got.Value, want) {
				t.Errorf("%s: got %.8f, want %.8f (|Δ| %.3g, tolerance %v)", pair, got.Value, want, math.Abs(got.Value-want), cfg.Tol)
			}
			for key, col := range src.extras {
				v, ok := got.Extras[key]
				w, err := tab.Float(i, col)
				if !ok || err != nil {
					continue
				}
				if extra[key] == nil {
					extra[key] = &Parity{Name: fmt.Sprintf("%v %s %s vs reference tool", m, name, key)}
				}
				extra[key].Add(pair, v, w)
				if !cfg.Tol.withinGolden(v, w) {
					t.Errorf("%s: %s got %.8f, want %.8f (tolerance %v)", pair, key, v, w, cfg.Tol)
				}
			}
		}
		pr.Release()
	}
	par.Log(t)
	for _, p := range extra {
		p.Log(t)
	}
}

// GoldenRefvectors checks every stored-image row of the metric's
// refvectors expected.tsv against its published tolerance and, where the
// row has the reference tool's locally computed value, against Tol.Golden.
func GoldenRefvectors(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, cfg Config) {
	src, ok := goldenSources[m]
	if !ok || src.refvec == "" {
		t.Skipf("no reference vectors known for %v", m)
	}
	dir := shared.Dir(t, "refvectors")
	tab, err := shared.ReadTSV(filepath.Join(dir, src.refvec))
	if err != nil {
		if os.IsNotExist(err) {
			t.Skipf("no %s", src.refvec)
		}
		t.Fatal(err)
	}
	pub := Parity{Name: fmt.Sprintf("%v refvectors vs published", m)}
	tight := Parity{Name: fmt.Sprintf("%v refvectors vs %s", m, src.refTight)}
	skipped := 0
	for i := range tab.Rows {
		refPath, distPath := tab.Get(i, "ref"), tab.Get(i, "dist")
		if src.refArg != "" {
			refPath, distPath = tab.Get(i, src.refArg), tab.Get(i, src.distArg)
		}
		if strings.HasPrefix(refPath, "synthetic:") || strings.HasPrefix(distPath, "synthetic:") {
			skipped++ // generated by rule, not stored
			continue
		}
		ref, dist := load(t, dir, refPath), load(t, dir, distPath)
		got, err := zenmetrics.ScoreOnce(context.Background(), b, m, ref, dist, cfg.Options)
		if err != nil {
			t.Errorf("row %d %s vs %s: %v", i+1, refPath, distPath, err)
			continue
		}
		pair := refPath + " vs " + distPath
		if want, err := tab.Float(i, "expected"); err == nil {
			spec := tab.Get(i, "tolerance")
			ok, err := shared.Tolerance(spec, want, got.Value)
			if err != nil {
				t.Errorf("row %d: %v", i+1, err)
			} else if !ok {
				t.Errorf("%s: got %.8f, published %.8f, outside %s", pair, got.Value, want, spec)
			}
			pub.Add(pair, got.Value, want)
		}
		if src.refTight != "" && tab.Has(src.refTight) {
			if want, err := tab.Float(i, src.refTight); err == nil {
				tight.Add(pair, got.Value, want)
				if !cfg.Tol.withinGolden(got.Value, want) {
					t.Errorf("%s: got %.8f, %s %.8f (|Δ| %.3g, tolerance %v)", pair, got.Value, src.refTight, want, math.Abs(got.Value-want), cfg.Tol)
				}
			}
		}
	}
	pub.Log(t)
	if src.refTight != "" {
		tight.Log(t)
	}
	if skipped > 0 {
		t.Logf("%d rows without stored images skipped", skipped)
	}
}

var cropRE = regexp.MustCompile(`^(.*)\[x=(\d+),y=(\d+),w=(\d+),h=(\d+)\]$`)

// load decodes dir/rel; rel may end in a crop "[x=,y=,w=,h=]".
func load(t testing.TB, dir, rel string) *zenmetrics.Image {
	t.Helper()
	var crop []int
	if m := cropRE.FindStringSubmatch(rel); m != nil {
		rel = m[1]
		for _, s := range m[2:] {
			v, _ := strconv.Atoi(s)
			crop = append(crop, v)
		}
	}
	im, err := imageio.DecodeFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatalf("decode %s: %v", rel, err)
	}
	if crop != nil {
		im, err = Crop(im, crop[0], crop[1], crop[2], crop[3])
		if err != nil {
			t.Fatalf("crop %s: %v", rel, err)
		}
	}
	return im
}

// Crop returns a copy of the w×h window of im at (x, y).
func Crop(im *zenmetrics.Image, x, y, w, h int) (*zenmetrics.Image, error) {
	if x < 0 || y < 0 || w <= 0 || h <= 0 || x+w > im.Width || y+h > im.Height {
		return nil, fmt.Errorf("%w: crop %d,%d %dx%d outside %dx%d", zenmetrics.ErrBadInput, x, y, w, h, im.Width, im.Height)
	}
	out := zenmetrics.NewImage(w, h, im.Format)
	bpp := im.Format.BytesPerPixel()
	for r := 0; r < h; r++ {
		copy(out.Row(r), im.Row(y + r)[x*bpp:(x+w)*bpp])
	}
	return out, nil
}

// freshCase is one synthetic pair for the agreement and determinism checks.
type freshCase struct {
	name      string
	ref, dist *zenmetrics.Image
}

// freshCases are synthetic pairs in every pixel format at awkward sizes
// (odd, non-multiple-of-8, barely above the minimum).
func freshCases() []freshCase {
	formats := []zenmetrics.PixelFormat{
		zenmetrics.RGB8, zenmetrics.Gray8, zenmetrics.RGBA8, zenmetrics.GrayA8,
		zenmetrics.RGB16, zenmetrics.RGBA16, zenmetrics.Gray16, zenmetrics.GrayA16,
	}
	sizes := [][2]int{{8, 8}, {9, 13}, {37, 23}, {64, 64}, {127, 65}, {200, 150}}
	var out []freshCase
	for i, f := range formats {
		for j, s := range sizes {
			if j%2 != i%2 && s[0] > 64 {
				continue // keep the run short: larger sizes for half the formats
			}
			ref, dist := Synthetic(s[0], s[1], int64(100*i+j), f)
			out = append(out, freshCase{fmt.Sprintf("%v_%dx%d", f, s[0], s[1]), ref, dist})
		}
	}
	// Mixed alpha: only one side has an alpha channel.
	r, d := Synthetic(96, 80, 7, zenmetrics.RGBA8)
	r3, d3 := Synthetic(96, 80, 7, zenmetrics.RGB8)
	out = append(out, freshCase{"rgba8_ref_rgb8_dist", r, d3}, freshCase{"rgb8_ref_rgba8_dist", r3, d})
	// A padded stride.
	ps, pd := SyntheticPair(33, 17, 11)
	out = append(out, freshCase{"rgb8_padded_stride", PadStride(ps, 5), PadStride(pd, 3)})
	return out
}

// PadStride copies im into a buffer whose rows are extra bytes longer,
// the extra bytes 0xA5: garbage a backend must not read (tests of strided
// inputs and of uploads cut at row boundaries).
func PadStride(im *zenmetrics.Image, extra int) *zenmetrics.Image {
	stride := im.Width*im.Format.BytesPerPixel() + extra
	out := &zenmetrics.Image{Width: im.Width, Height: im.Height, Format: im.Format, Stride: stride,
		Pix: make([]byte, stride*im.Height)}
	for y := 0; y < im.Height; y++ {
		copy(out.Pix[y*stride:], im.Row(y))
		for i := 0; i < extra; i++ {
			out.Pix[y*stride+len(im.Row(y))+i] = 0xA5 // garbage the backend must not read
		}
	}
	return out
}

// realCases are crops and full pairs of testdata/tiny.
func realCases(t testing.TB) []freshCase {
	dir := shared.Testdata(t, "tiny")
	tab, err := shared.ReadTSV(filepath.Join(dir, "scores.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var out []freshCase
	for i := range tab.Rows {
		ref, dist := load(t, dir, tab.Get(i, "ref")), load(t, dir, tab.Get(i, "dist"))
		name := tab.Get(i, "dist")
		out = append(out, freshCase{name, ref, dist})
		// An odd-sized crop at an odd offset.
		cw, ch := min(ref.Width-3, 101), min(ref.Height-5, 77)
		rc, err1 := Crop(ref, 3, 5, cw, ch)
		dc, err2 := Crop(dist, 3, 5, cw, ch)
		if err1 == nil && err2 == nil {
			out = append(out, freshCase{name + "[crop]", rc, dc})
		}
	}
	return out
}

func score(t testing.TB, b zenmetrics.Backend, m zenmetrics.Metric, opt zenmetrics.Options, ref, dist *zenmetrics.Image) float64 {
	t.Helper()
	s, err := zenmetrics.ScoreOnce(context.Background(), b, m, ref, dist, opt)
	if err != nil {
		t.Fatalf("%s: %v", b.Name(), err)
	}
	return s.Value
}

// VsReference compares the backend with cfg.Reference on synthetic pairs
// in every pixel format and on real pairs (and crops) from testdata/tiny.
func VsReference(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, cfg Config) {
	if cfg.Reference == nil {
		t.Skip("no reference backend given")
	}
	par := Parity{Name: fmt.Sprintf("%v %s vs %s", m, b.Name(), cfg.Reference.Name())}
	cases := append(freshCases(), realCases(t)...)
	for _, c := range cases {
		if c.ref.Width < cfg.MinSide || c.ref.Height < cfg.MinSide {
			continue // below the metric's minimum
		}
		got := score(t, b, m, cfg.Options, c.ref, c.dist)
		want := score(t, cfg.Reference, m, cfg.Options, c.ref, c.dist)
		par.Add(c.name, got, want)
		if d := math.Abs(got - want); !(d <= cfg.Tol.Reference) && !(math.IsInf(got, 0) && got == want) {
			t.Errorf("%s: %s %.10g, reference %.10g (|Δ| %.3g > %g)", c.name, b.Name(), got, want, d, cfg.Tol.Reference)
		}
	}
	par.Log(t)
}

// Determinism scores the same inputs twice, fresh and through one prepared
// reference, and demands identical bits; scoring the reference against
// itself must also be repeatable.
func Determinism(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, cfg Config) {
	ref, dist := SyntheticPair(cfg.side(160), cfg.side(120), 42)
	a := score(t, b, m, cfg.Options, ref, dist)
	c := score(t, b, m, cfg.Options, ref, dist)
	if math.Float64bits(a) != math.Float64bits(c) {
		t.Errorf("two fresh scores differ: %v vs %v", a, c)
	}
	pr, err := b.Prepare(context.Background(), m, ref, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Release()
	for i := 0; i < 2; i++ {
		s, err := pr.Score(context.Background(), dist)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(s.Value) != math.Float64bits(a) {
			t.Errorf("prepared score #%d %v differs from fresh score %v", i+1, s.Value, a)
		}
	}
	// The dist image must not be modified by scoring.
	before := append([]byte(nil), dist.Pix...)
	if _, err := pr.Score(context.Background(), dist); err != nil {
		t.Fatal(err)
	}
	if string(before) != string(dist.Pix) {
		t.Error("Score modified the distorted image's pixels")
	}
}

// Errors checks the error contract: size mismatch, an image below the
// metric's minimum, use after Release, cancelled context, bad metric.
func Errors(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, cfg Config) {
	ctx := context.Background()
	ref, _ := SyntheticPair(cfg.side(48), cfg.side(40), 1)
	_, other := SyntheticPair(cfg.side(48), cfg.side(40)-1, 2)

	if _, err := zenmetrics.ScoreOnce(ctx, b, m, ref, other, cfg.Options); !errors.Is(err, zenmetrics.ErrSizeMismatch) {
		t.Errorf("ScoreOnce with 48x40 vs 48x39: err = %v, want ErrSizeMismatch", err)
	}
	pr, err := b.Prepare(ctx, m, ref, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pr.Score(ctx, other); !errors.Is(err, zenmetrics.ErrSizeMismatch) {
		t.Errorf("Score with 48x40 vs 48x39: err = %v, want ErrSizeMismatch", err)
	}
	var sm *zenmetrics.SizeMismatchError
	if _, err := pr.Score(ctx, other); !errors.As(err, &sm) || sm.DistHeight != other.Height {
		t.Errorf("Score size mismatch: err = %v, want *SizeMismatchError naming 48x39", err)
	}
	pr.Release()
	pr.Release() // idempotent
	if _, err := pr.Score(ctx, ref); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Errorf("Score after Release: err = %v, want ErrReleased", err)
	}

	tiny := cfg.Tiny
	if tiny == 0 {
		tiny = 4
	}
	if cfg.NoMinSize {
		for _, s := range [][2]int{{tiny, tiny}, {64, tiny}, {1, 1}} {
			r, d := SyntheticPair(s[0], s[1], 3)
			if v, err := zenmetrics.ScoreOnce(ctx, b, m, r, d, cfg.Options); err != nil || math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
				t.Errorf("ScoreOnce %dx%d (no minimum size): %v, %v", s[0], s[1], v.Value, err)
			}
		}
	} else {
		small, _ := SyntheticPair(tiny, tiny, 3)
		if _, err := b.Prepare(ctx, m, small, cfg.Options); !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("Prepare %dx%d: err = %v, want ErrBadInput", tiny, tiny, err)
		}
		wide, _ := SyntheticPair(64, tiny, 3)
		if _, err := b.Prepare(ctx, m, wide, cfg.Options); !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("Prepare 64x%d: err = %v, want ErrBadInput", tiny, err)
		}
	}

	bad := &zenmetrics.Image{Width: 16, Height: 16, Format: zenmetrics.RGB8, Stride: 48, Pix: make([]byte, 100)}
	if _, err := b.Prepare(ctx, m, bad, cfg.Options); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("Prepare with a short buffer: err = %v, want ErrBadInput", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Prepare(cctx, m, ref, cfg.Options); !errors.Is(err, context.Canceled) {
		t.Errorf("Prepare with a cancelled context: err = %v, want context.Canceled", err)
	}

	if _, err := b.Prepare(ctx, zenmetrics.Metric(0), ref, cfg.Options); !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Errorf("Prepare with metric 0: err = %v, want ErrUnsupported", err)
	}
}

// Concurrent scores several distorted images on one prepared reference
// from several goroutines at once and compares with sequential scores.
func Concurrent(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, cfg Config) {
	ref, _ := SyntheticPair(cfg.side(96), cfg.side(72), 5)
	var dists []*zenmetrics.Image
	for i := 0; i < 6; i++ {
		_, d := SyntheticPair(cfg.side(96), cfg.side(72), int64(10+i))
		dists = append(dists, d)
	}
	pr, err := b.Prepare(context.Background(), m, ref, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Release()
	want := make([]float64, len(dists))
	for i, d := range dists {
		s, err := pr.Score(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = s.Value
	}
	const rounds = 3
	got := make([][]float64, rounds)
	errs := make([][]error, rounds)
	var wg sync.WaitGroup
	for r := 0; r < rounds; r++ {
		got[r] = make([]float64, len(dists))
		errs[r] = make([]error, len(dists))
		for i, d := range dists {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := pr.Score(context.Background(), d)
				got[r][i], errs[r][i] = s.Value, err
			}()
		}
	}
	wg.Wait()
	for r := range got {
		for i := range got[r] {
			if errs[r][i] != nil {
				t.Errorf("round %d image %d: %v", r, i, errs[r][i])
			} else if math.Float64bits(got[r][i]) != math.Float64bits(want[i]) {
				t.Errorf("round %d image %d: concurrent %v, sequential %v", r, i, got[r][i], want[i])
			}
		}
	}
	// Distinct distortions should not all score alike.
	s := append([]float64(nil), want...)
	sort.Float64s(s)
	if s[0] == s[len(s)-1] {
		t.Errorf("all %d distorted images got the same score %v", len(s), s[0])
	}
}
