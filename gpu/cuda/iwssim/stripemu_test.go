package iwssim

import (
	"context"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuiw "github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// stripChecks follows the launches of a strip preparation or score: a
// checker per crop (switched at each upload, which starts a crop) over
// one record of written buffers and one coverage of the image's rows.
type stripChecks struct {
	t       *testing.T
	sigs    map[string][]cudaemu.Param
	p       *stripPlan
	lay     layout
	written map[cuda.DevPtr]bool
	cover   *coverage
	c       *checker
}

func newStripChecks(t *testing.T, sigs map[string][]cudaemu.Param, p *stripPlan, lay layout) *stripChecks {
	return &stripChecks{t: t, sigs: sigs, p: p, lay: lay, written: map[cuda.DevPtr]bool{}, cover: newCoverage()}
}

// crop starts band i's checker.
func (sc *stripChecks) crop(i int) {
	sc.c = newChecker(sc.t, sc.sigs, sc.lay, &sc.p.bands[i].win)
	sc.c.Written, sc.c.cover = sc.written, sc.cover
}

// expect checks that the coverage of the named kernel computed every
// image row of the scales it runs at exactly once.
func (sc *stripChecks) expect(name string, rows func(k int) int, cover [nScales]map[int]int, scales int) {
	for k := 0; k < scales; k++ {
		n := rows(k)
		for r := 0; r < n; r++ {
			if cover[k][r] != 1 {
				sc.t.Fatalf("%s scale %d: image row %d computed %d times", name, k, r, cover[k][r])
			}
		}
		if len(cover[k]) != n {
			sc.t.Errorf("%s scale %d: %d rows computed, the image has %d", name, k, len(cover[k]), n)
		}
	}
}

// The launches of a strip preparation (every crop's reference, the
// covariance table; then, kept, every crop's vᵀC⁻¹v) and of a strip
// score, checked launch by launch as whole images are (TestLaunchPlan),
// with each crop's own geometry and offsets; over the bands, every
// covariance block row, every vᵀC⁻¹v region row and every row sum of
// every scale of the image is computed exactly once, and no crop's
// upload outgrows the slot's buffer.
func TestStripLaunchPlan(t *testing.T) {
	sigs := cudatest.Signatures(t, kernelSource)
	for ci, c := range stripCases {
		for _, keep := range []bool{true, false} {
			f := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA16, zenmetrics.GrayA8, zenmetrics.Gray16}[ci%4]
			p, err := planStrips(c.w, c.h, func(int) int64 { return 0 }, -1, c.band)
			if err != nil {
				t.Fatal(err)
			}
			p.keep = keep
			name := fmt.Sprintf("%dx%d_band%d_keep%v", c.w, c.h, c.band, keep)
			ref, dist := metrictest.Synthetic(c.w, c.h, 3, f)
			fa := cudatest.NewFake()
			sr, s := fakeStrips(fa, p, cuda.CropRaw(ref, p.rows))
			covBuf := fa.Alloc(p.covBytes())
			sc := newStripChecks(t, sigs, p, layoutOf(ref))
			var rec cudaemu.Recorder
			checked, calls := 0, 0
			flush := func() {
				for ; checked < len(rec.L); checked++ {
					sc.c.check(checked, rec.L[checked])
				}
			}
			// band maps the n-th upload to its band: one per band, two
			// (reference, distorted) in a recomputed score.
			band := func(n int) int { return n }
			up := func(dst *cuda.Buffer, src []byte, ready func(int64) error) error {
				flush()
				if dst != s.raw || int64(len(src)) > dst.Size {
					t.Fatalf("%s: upload of %d bytes into %+v", name, len(src), dst)
				}
				sc.crop(band(calls))
				calls++
				sc.written[dst.Ptr] = true
				return ready(int64(len(src)))
			}
			if err := sr.queuePrepare(&rec, up, s, ref, covBuf); err != nil {
				t.Fatal(err)
			}
			flush()
			sc.expect(name+" cov", func(k int) int { return p.gm.s[k].h - 2 }, sc.cover.cov, nScales-1)
			// The host's model, then (kept) every crop's vᵀC⁻¹v.
			sc.written[sr.model.Ptr] = true
			var mp refPlanes
			for k := 0; k < nScales-1; k++ {
				mp.nlam[k] = components(k)
			}
			sr.setModel(&mp)
			if keep {
				for i := range sr.kept {
					sc.crop(i)
					sc.c.level = 4 * (nScales - 1)
					var r cudaemu.Recorder
					if err := queueMahal(&r, sr.k, &p.bands[i].win, &sr.kept[i]); err != nil {
						t.Fatal(err)
					}
					for j, l := range r.L {
						sc.c.check(j, l)
					}
				}
				sc.expect(name+" mahal", func(k int) int { return p.gm.s[k].rh }, sc.cover.mahal, nScales-1)
				// Every plane is written, but vᵀC⁻¹v at a scale where
				// the band owns no region row (no launch reads it).
				for i, rp := range sr.kept {
					for k := range rp.y {
						for j, b := range append([]*cuda.Buffer{rp.y[k]}, rp.m[k][:mapsAt(k)]...) {
							if _, n := p.bands[i].regions(k); !sc.written[b.Ptr] && (j < 5 || n > 0) {
								t.Errorf("%s: band %d: scale %d's plane %d is never written", name, i, k, j)
							}
						}
					}
				}
			}
			// The score.
			sc = newStripChecks(t, sigs, p, layoutOf(dist))
			for _, rp := range sr.kept {
				for _, b := range rp.buffers() {
					sc.written[b.Ptr] = true
				}
			}
			sc.written[sr.model.Ptr] = true
			rec, checked, calls = cudaemu.Recorder{}, 0, 0
			if !keep {
				band = func(n int) int { return n / 2 }
			}
			if err := sr.queueScore(&rec, up, s, ref, dist); err != nil {
				t.Fatal(err)
			}
			flush()
			sc.expect(name+" terms", func(k int) int { return p.gm.s[k].rh }, sc.cover.terms, nScales)
			if !keep {
				sc.expect(name+" mahal", func(k int) int { return p.gm.s[k].rh }, sc.cover.mahal, nScales-1)
			}
			if calls != len(p.bands)*map[bool]int{true: 1, false: 2}[keep] {
				t.Errorf("%s: %d uploads for %d bands", name, calls, len(p.bands))
			}
		}
	}
}

// emulateStrips records a strip preparation and score over p, replays
// them with the emulator (the host's model between the two sessions, as
// on a device) and returns the score (or pool's refusal).
func emulateStrips(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image, p *stripPlan) (float64, error) {
	t.Helper()
	fa := cudatest.NewFake()
	raw := max(cuda.CropRaw(ref, p.rows), cuda.CropRaw(dist, p.rows))
	sr, s := fakeStrips(fa, p, raw)
	covBuf := fa.Alloc(p.covBytes())
	// As an overlapped upload: the bytes first, then the unpacks in
	// chunks of 29 rows and a bit.
	chunk := 29*int64(ref.Stride) + 5
	// Phase 1: every crop's reference and the covariance table.
	rp := cudatest.NewReplay(t, emu, fa.Bufs)
	if err := sr.queuePrepare(&rp.Rec, rp.Chunked(chunk), s, ref, covBuf); err != nil {
		t.Fatal(err)
	}
	rp.Flush()
	run := rp.Run
	run.Dump(covBuf, p.covBytes())
	var kept []*cuda.Buffer
	for _, kp := range sr.kept {
		kept = append(kept, kp.buffers()[1:]...) // the crop's planes (ss not written yet)
	}
	for _, b := range kept {
		run.Dump(b, b.Size)
	}
	out := run.Run()
	_, n := covOffsets(p.gm)
	var mp refPlanes
	m, err := model(p.gm, f64s(out[0])[:n], &mp)
	if err != nil {
		t.Fatal(err)
	}
	sr.setModel(&mp)
	// Phase 2: the model, the kept crops' vᵀC⁻¹v, then the score.
	rp = cudatest.NewReplay(t, emu, fa.Bufs)
	run = rp.Run
	for i, b := range kept {
		run.Upload(b, out[1+i])
	}
	var buf []byte
	run.Upload(sr.model, f64Bytes(&buf, m))
	if err := sr.queueKeptMahal(&rp.Rec); err != nil {
		t.Fatal(err)
	}
	if err := sr.queueScore(&rp.Rec, rp.Chunked(chunk), s, ref, dist); err != nil {
		t.Fatal(err)
	}
	rp.Flush()
	run.Dump(s.sums, sumsBytes(p.gm))
	out = run.Run()
	return pool(p.gm, f64s(out[0]))
}

// TestEmulatedStrips runs iwssim.cu on the CPU (cudaemu, opt-in with
// ZENMETRICS_CUDA_EMULATE=1) for strip preparations and scores, with the
// reference kept and recomputed, and compares them with the same
// kernels' whole-image score (emulate) and with cpu/iwssim. Tolerance:
// none. Every owned value is computed from the whole image's inputs by
// the same operations (strip.go; TestStripHalo checks the inputs on the
// CPU reference), the covariance table and the row sums are the whole
// image's and are added in the same order, so the score must be the same
// bits; the emulator's memory starts as NaN, so a row that no strip
// wrote fails too. Sizes: the 161 minimum width, odd heights, the
// smallest band (16 rows, one alignment: 13 crops, each the whole
// 193-row image), awkward bands, a last band shorter than the others,
// padded strides and mixed formats. -short runs the first two: the
// emulator takes about a minute per crop on a loaded 2-core machine
// (TestStripLaunchPlan and TestStripHalo cover the 16-row band without
// it).
func TestEmulatedStrips(t *testing.T) {
	emu := cudaemu.Build(t, source())
	cases := []struct {
		w, h, band int
		rf, df     zenmetrics.PixelFormat
		keep, pad  bool
	}{
		{161, 300, 112, zenmetrics.RGB8, zenmetrics.RGB8, true, false},
		{200, 411, 96, zenmetrics.RGBA8, zenmetrics.Gray16, false, true},
		{170, 523, 48, zenmetrics.RGB16, zenmetrics.RGBA8, true, true},
		{161, 193, 16, zenmetrics.GrayA8, zenmetrics.RGB8, false, false},
	}
	tol := emuTolScore()
	for i, c := range cases {
		if testing.Short() && i >= 2 {
			break
		}
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(80+i), c.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(80+i), c.df)
		if c.pad {
			ref, dist = padded(ref), padded(dist)
		}
		whole := emulate(t, emu, ref, dist)
		p, err := planStrips(c.w, c.h, func(int) int64 { return 0 }, -1, c.band)
		if err != nil {
			t.Fatal(err)
		}
		p.keep = c.keep
		name := fmt.Sprintf("%dx%d_%v_%v_band%d_keep%v", c.w, c.h, c.rf, c.df, c.band, c.keep)
		got, err := emulateStrips(t, emu, ref, dist, p)
		want, cerr := cpuiw.Score(ref, dist, cpuiw.Config{})
		t.Logf("%s: %d strips of %d crop rows: iwssim %.17g (%v), whole image %.17g (%v), cpu %.17g (%v)", name, len(p.bands), p.rows, got, err, whole.score, whole.err, want, cerr)
		if len(p.bands) < 2 {
			t.Errorf("%s: %d strips; the case is meant to have several", name, len(p.bands))
		}
		if err != nil || whole.err != nil || math.Float64bits(got) != math.Float64bits(whole.score) {
			t.Errorf("%s: strips differ from the whole image", name)
		}
		if cerr != nil || !(math.Abs(got-want) <= tol*math.Abs(want)) {
			t.Errorf("%s: strips differ from the CPU reference", name)
		}
	}
}

// TestStripsGPU compares strip scores with the whole image's on a device,
// with the reference kept and recomputed, over forced strip heights
// (the smallest, 16, too) and sizes up to 2 MP, then four callers at once
// on one strip reference (cudatest.StripsKeptAndRecomputed) and the
// strip count and residency StripsOf reports. Tolerance: none, as
// TestEmulatedStrips says. Skipped without a device, failed under
// ZENMETRICS_REQUIRE_CUDA=1.
func TestStripsGPU(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	defer setKeep(nil)
	sizes := []struct{ w, h, band int }{{161, 300, 16}, {200, 411, 96}, {170, 333, 112}, {163, 1001, 64}, {1000, 777, 128}, {1920, 1080, 256}, {517, 2049, 1000}}
	for i, c := range sizes {
		f := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.GrayA16, zenmetrics.RGB16}[i%4]
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(90+i), f)
		want := scoreGPU(t, b, ref, dist)
		var got zenmetrics.Score
		score := func(r zenmetrics.Reference) (err error) { got, err = r.Score(ctx, dist); return err }
		cudatest.EachKeep(t, b, zenmetrics.IWSSIM, ref, zenmetrics.Options{}, c.band, fmt.Sprintf("%+v", c), setKeep, score, func(run cudatest.StripRun) {
			t.Logf("%dx%d %v band %d: %d strips (kept %v, %v): iwssim %.17g, whole %.17g", c.w, c.h, f, c.band, run.N, run.Kept, run.OK, got.Value, want)
			if !run.Good() || run.N < 2 || math.Float64bits(got.Value) != math.Float64bits(want) {
				t.Errorf("%+v keep %v: strips differ from the whole image", c, run.Keep)
			}
		})
	}
	cudatest.StripsKeptAndRecomputed(t, b, zenmetrics.IWSSIM, setKeep)
}

// BenchmarkStrips is cudatest.Bench.Strips: cached strip scores at 16 and
// 64 MP with the free memory capped at a quarter of the whole image's.
func BenchmarkStrips(b *testing.B) { bench.Strips(b) }
