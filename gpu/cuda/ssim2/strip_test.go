package ssim2

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpussim2 "github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// The strip kernels' signatures match ssim2.cu's declarations (what
// launch.CheckArgs enforces at every launch).
func TestStripSignatures(t *testing.T) {
	sigs, err := cudaemu.Signatures(kernelSource)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range append(newKernels().list(), wholeKernels()...) {
		ps, ok := sigs[k.Name]
		if !ok {
			t.Errorf("kernel %s is not in ssim2.cu", k.Name)
			continue
		}
		var s []byte
		for _, p := range ps {
			s = append(s, p.Kind)
		}
		if string(s) != k.Sig {
			t.Errorf("kernel %s: host signature %q, source %q", k.Name, k.Sig, s)
		}
	}
}

// The bands' windows tile every scale's rows exactly once (the image's
// scales, halved up), each window keeps N+1 crop rows above and N−1 plus a
// partial row below at its scale (or its crop starts or ends at the image's
// edge, where the whole image reads zeros too), and crops
// start on the 32-row alignment: what the bit-exact resumption needs.
func TestStripGeometry(t *testing.T) {
	for _, c := range []struct{ w, h, band int }{{24, 600, 128}, {20, 700, 224}, {100, 2000, 32}, {9, 1025, 300}, {50, 257, 64}} {
		p, err := planStrips(c.w, c.h, 1, func(int) int64 { return 0 }, -1, c.band)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		for k, s := range p.full {
			next := 0
			for i, b := range p.bands {
				if b.C0%stripAlign != 0 || len(b.sc) != len(p.full) || b.sc[k].w != s.w || b.r0[k] != b.C0>>k {
					t.Fatalf("%+v band %d: crop %+v, scales %v", c, i, b.Strip, b.sc)
				}
				lo, hi := b.lo[k], b.hi[k]
				if lo+b.r0[k] != next || hi > b.sc[k].h || hi <= lo {
					t.Fatalf("%+v scale %d band %d: window [%d,%d) at %d, expected %d", c, k, i, lo, hi, lo+b.r0[k], next)
				}
				exact := (b.C1 - b.C0) >> k // rows made of whole 2^k-row blocks
				if (b.C0 != 0 && lo < iirN+1) || (b.C1 != c.h && hi+iirN-1 > exact) {
					t.Errorf("%+v scale %d band %d: window [%d,%d) of %d exact rows lacks context", c, k, i, lo, hi, exact)
				}
				next = hi + b.r0[k]
			}
			if next != s.h {
				t.Errorf("%+v scale %d: windows end at %d of %d rows", c, k, next, s.h)
			}
		}
	}
}

// The plan follows the budget (down to about a fifth of a whole image
// here: a crop keeps 384 halo rows, and the sums and recursion state are
// per column of the whole width) and its model is exactly the buffers the
// reference and a slot take; a budget below any plan is an
// OutOfMemoryError.
func TestStripBudget(t *testing.T) {
	w, h := 2000, 3000
	rawOf := func(rows int) int64 { return 8 * int64(w) * int64(rows) }
	one := newStripPlan(w, h, 2, []strips.Strip{{Y0: 0, Y1: h, C0: 0, C1: h}}, true).memory(rawOf(h))
	cudatest.StripBudgets(t, one, []float64{1, 0.7, 0.4, 0.25}, func(budget int64) (cudatest.BudgetPlan, error) {
		p, err := planStrips(w, h, 2, rawOf, budget, 0)
		if err != nil {
			return cudatest.BudgetPlan{}, err
		}
		fa := cudatest.NewFake()
		if p.keep {
			for _, b := range p.bands {
				for v := 0; v < p.pyrs; v++ {
					newPyramid(b.sc, fa.Alloc)
				}
			}
		}
		fillStripSlot(&stripSlot{}, p, rawOf(p.rows), fa.Alloc)
		return cudatest.BudgetPlan{Bands: len(p.bands), Rows: p.rows, Keep: p.keep, Memory: p.memory(rawOf(p.rows)), Held: cudatest.Held(fa)}, nil
	})
	if _, err := planStrips(w, h, 2, rawOf, 4<<20, 0); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("a 4 MiB budget: %v, want ErrOutOfMemory", err)
	}
}

// wholeKernels are the whole image's vertical passes (ssim2.go launches
// them); the emulation compares the strips with them.
func wholeKernels() []*kern {
	return []*kern{{Name: "vblur_ref", Sig: "pppii"}, {Name: "vblur_terms", Sig: "ppppppii"}}
}

// queueWhole records the whole image's reference pyramid and score with
// ssim2.go's sequence (first_scale or downsample and xyb_planes, the
// horizontal then the vertical pass per scale; the score's terms per
// scale, then reduce_sums into run 0), for one view without compositing.
func queueWhole(q launch.Launcher, k *kernels, sc []scale, s *stripSlot, py pyramid, ref, dist *zenmetrics.Image, up uploadFn) error {
	wk := wholeKernels()
	if err := up(s.raw, ref.Pix[:cuda.RawBytes(ref)]); err != nil {
		return err
	}
	cur := 0
	for kk, c := range sc {
		var err error
		if cur, err = queueXYB(q, k, sc, kk, cur, side(ref, false, 0), &s.slot, py[kk].img); err != nil {
			return err
		}
		if err := q.Launch(&k.hRef, tiles(c.h), tb, py[kk].img, s.hb, c.w, c.h, 0, c.h); err != nil {
			return err
		}
		if err := q.Launch(wk[0], tiles(c.w), tb, s.hb, py[kk].mu, py[kk].vr, c.w, c.h); err != nil {
			return err
		}
	}
	if err := up(s.raw, dist.Pix[:cuda.RawBytes(dist)]); err != nil {
		return err
	}
	cur = 0
	for kk, c := range sc {
		var err error
		if cur, err = queueXYB(q, k, sc, kk, cur, side(dist, false, 0.5), &s.slot, s.img2); err != nil {
			return err
		}
		if err := q.Launch(&k.hDist, tiles(c.h), tb, py[kk].img, s.img2, s.hb, c.w, c.h, 0, c.h); err != nil {
			return err
		}
		sums := &cuda.Buffer{Ptr: s.sums.Ptr + cuda.DevPtr(8*int64(kk)*s.sumStep), Size: 8 * s.sumStep}
		if err := q.Launch(wk[1], tiles(c.w), tb, s.hb, py[kk].img, py[kk].mu, py[kk].vr, s.img2, sums, c.w, c.h); err != nil {
			return err
		}
	}
	p := &stripPlan{w: sc[0].w, full: sc}
	return queueReduce(q, k, p, s, 0)
}

// emulateWhole is the whole image's score through the emulator.
func emulateWhole(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image) float64 {
	t.Helper()
	sc := plan(ref.Width, ref.Height)
	p := newStripPlan(ref.Width, ref.Height, 1, []strips.Strip{{Y0: 0, Y1: ref.Height, C0: 0, C1: ref.Height}}, true)
	fa := &cudaemu.FakeAlloc{Round: cuda.AllocSize}
	py := newPyramid(sc, fa.Alloc)
	s := &stripSlot{}
	fillStripSlot(s, p, max(cuda.RawBytes(ref), cuda.RawBytes(dist)), fa.Alloc)
	r := cudatest.NewReplay(t, emu, fa.Bufs)
	if err := queueWhole(&r.Rec, newKernels(), sc, s, py, ref, dist, r.Upload); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	r.Run.Dump(s.tot, numScales*3*numTerms*8)
	out := r.Run.Run()
	return (&stripRun{p: p}).score(out[0], 1)
}

// emulateStrips is a strip prepare and score over p through the emulator.
func emulateStrips(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image, p *stripPlan) float64 {
	t.Helper()
	views, blend, bgs := stripViews(ref)
	sr := &stripRun{k: newKernels(), p: p, views: views, blend: blend, bgs: bgs}
	fa := &cudaemu.FakeAlloc{Round: cuda.AllocSize}
	if p.keep {
		for _, b := range p.bands {
			var pys []pyramid
			for range bgs {
				pys = append(pys, newPyramid(b.sc, fa.Alloc))
			}
			sr.kept = append(sr.kept, pys)
		}
	}
	s := &stripSlot{}
	fillStripSlot(s, p, max(cuda.RawBytes(strips.Crop(ref, 0, p.rows)), cuda.RawBytes(strips.Crop(dist, 0, p.rows))), fa.Alloc)
	r := cudatest.NewReplay(t, emu, fa.Bufs)
	if p.keep {
		for pi := range bgs {
			if err := sr.queuePyramid(&r.Rec, r.Upload, s, ref, pi, func(i int) pyramid { return sr.kept[i][pi] }); err != nil {
				t.Fatal(err)
			}
		}
	}
	runs, err := sr.queueScore(&r.Rec, r.Upload, s, ref, dist)
	if err != nil {
		t.Fatal(err)
	}
	r.Flush()
	r.Run.Dump(s.tot, int64(runs)*numScales*3*numTerms*8)
	out := r.Run.Run()
	return sr.score(out[0], runs)
}

// TestEmulatedStrips runs ssim2.cu on the CPU (cudaemu, opt-in with
// ZENMETRICS_CUDA_EMULATE=1): strip scores, the reference kept and
// recomputed, against the whole image's kernels (vblur_ref, vblur_terms,
// as ssim2.go queues them). Tolerance: none. The recursion resumes with
// the whole image's state and the sums are added by the same threads in
// the same order (strip.go), so the score must be bit-identical; and
// within 1e-6 of cpu/ssim2 (the whole image's GPU tolerance is 0.02; the
// kernels differ from the CPU only by summation order, ~1e-13).
func TestEmulatedStrips(t *testing.T) {
	emu := cudaemu.Build(t, source())
	for i, c := range []struct {
		w, h, band int
		f          zenmetrics.PixelFormat
	}{
		{24, 600, 128, zenmetrics.RGB8},  // 5 bands, the last short
		{19, 705, 32, zenmetrics.Gray16}, // bands of one alignment, odd sizes
	} {
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(30+i), c.f)
		want := emulateWhole(t, emu, ref, dist)
		cpu, err := cpussim2.Score(ref, dist, cpussim2.Config{})
		if err != nil {
			t.Fatal(err)
		}
		for _, keep := range []bool{true, false} {
			p, err := planStrips(c.w, c.h, 1, func(int) int64 { return 0 }, -1, c.band)
			if err != nil {
				t.Fatal(err)
			}
			p.keep = keep
			got := emulateStrips(t, emu, ref, dist, p)
			name := fmt.Sprintf("%dx%d_%v_band%d_keep%v", c.w, c.h, c.f, c.band, keep)
			t.Logf("%s: %d strips of %d crop rows: %.17g, whole image %.17g, cpu %.17g", name, len(p.bands), p.rows, got, want, cpu)
			if got != want || math.IsNaN(got) || math.Abs(got-cpu) > 1e-6 {
				t.Errorf("%s: strips %.17g differ from the whole image %.17g (cpu %.17g)", name, got, want, cpu)
			}
		}
	}
}

// TestStripsGPU compares strip scores with the whole image's on a device
// (kept and recomputed references, forced strip heights, transparency on
// both backgrounds): bit-identical, as TestEmulatedStrips says. Skipped
// without a device, failed under ZENMETRICS_REQUIRE_CUDA=1.
func TestStripsGPU(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	defer setKeep(nil)
	for i, c := range []struct {
		w, h, band int
		f          zenmetrics.PixelFormat
	}{{24, 600, 128, zenmetrics.RGB8}, {131, 1411, 32, zenmetrics.RGBA8}, {1000, 1777, 192, zenmetrics.Gray16}, {1920, 1080, 300, zenmetrics.RGB16}, {517, 4099, 1000, zenmetrics.GrayA8}} {
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(50+i), c.f)
		want, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.SSIMULACRA2, ref, dist, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got zenmetrics.Score
		score := func(r zenmetrics.Reference) (err error) { got, err = r.Score(ctx, dist); return err }
		cudatest.EachKeep(t, b, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{}, c.band, fmt.Sprintf("%+v", c), setKeep, score, func(run cudatest.StripRun) {
			t.Logf("%dx%d %v band %d: %d strips (kept %v): %.17g, whole %.17g", c.w, c.h, c.f, c.band, run.N, run.Kept, got.Value, want.Value)
			if !run.Good() || got.Value != want.Value {
				t.Errorf("%+v keep %v: strips differ from the whole image", c, run.Keep)
			}
		})
	}
	// Four callers at once on one strip reference, kept and recomputed.
	cudatest.StripsKeptAndRecomputed(t, b, zenmetrics.SSIMULACRA2, setKeep)
}

// BenchmarkStrips is cudatest.Bench.Strips: cached strip scores at 16 and
// 64 MP with the free memory capped at a quarter of the whole image's.
func BenchmarkStrips(b *testing.B) { bench.Strips(b) }

// A strip score's launches: per run and scale the vertical passes' rows
// (r0 + [lo, hi)) tile the image's rows once, in order, the first band
// alone starting the recursion; every plane a launch names is large
// enough for the crop it covers; one reduction per run.
func TestStripLaunchPlan(t *testing.T) {
	for _, c := range []struct {
		w, h, band int
		f          zenmetrics.PixelFormat
		keep       bool
	}{{24, 600, 128, zenmetrics.RGB8, true}, {40, 1000, 32, zenmetrics.RGBA8, false}, {9, 1025, 300, zenmetrics.Gray16, true}} {
		ref, dist := metrictest.Synthetic(c.w, c.h, 3, c.f)
		views, blend, bgs := stripViews(ref)
		p, err := planStrips(c.w, c.h, len(bgs), func(int) int64 { return 0 }, -1, c.band)
		if err != nil {
			t.Fatal(err)
		}
		p.keep = c.keep
		sr := &stripRun{k: newKernels(), p: p, views: views, blend: blend, bgs: bgs}
		fa := &cudaemu.FakeAlloc{Round: cuda.AllocSize}
		if p.keep {
			for _, b := range p.bands {
				var pys []pyramid
				for range bgs {
					pys = append(pys, newPyramid(b.sc, fa.Alloc))
				}
				sr.kept = append(sr.kept, pys)
			}
		}
		s := &stripSlot{}
		fillStripSlot(s, p, max(cuda.RawBytes(strips.Crop(ref, 0, p.rows)), cuda.RawBytes(strips.Crop(dist, 0, p.rows))), fa.Alloc)
		var rec cudaemu.Recorder
		runs, err := sr.queueScore(&rec, func(dst *cuda.Buffer, src []byte) error {
			if dst != s.raw || int64(len(src)) > dst.Size {
				t.Fatalf("%+v: upload of %d bytes into %+v", c, len(src), dst)
			}
			return nil
		}, s, ref, dist)
		if err != nil {
			t.Fatal(err)
		}
		next := make([]int, len(p.full))
		reduces := 0
		for _, l := range rec.L {
			ints := []int{}
			for _, a := range l.Args {
				if v, ok := a.(int); ok {
					ints = append(ints, v)
				}
			}
			switch l.K.Name {
			case "vblur_terms_strip":
				w, h, r0, lo, hi, first := ints[0], ints[1], ints[2], ints[3], ints[4], ints[5]
				k := -1
				for i, sc := range p.full {
					if sc.w == w {
						k = i
					}
				}
				if k < 0 {
					t.Fatalf("%+v: vertical pass %d wide", c, w)
				}
				if first == 1 {
					next[k] = 0
				}
				if (first == 1) != (r0 == 0 && lo == 0 && next[k] == 0) || r0+lo != next[k] || hi > h || hi <= lo {
					t.Fatalf("%+v scale %d: rows %d+[%d,%d) (first %d) after row %d", c, k, r0, lo, hi, first, next[k])
				}
				next[k] = r0 + hi
				for j, a := range l.Args[:5] {
					if b := a.(*cuda.Buffer); j > 0 && b.Size < 4*3*int64(w)*int64(h) || j == 0 && b.Size < 4*9*int64(w)*int64(h) {
						t.Fatalf("%+v: argument %d of %d bytes for a %d×%d crop", c, j, b.Size, w, h)
					}
				}
			case "reduce_sums":
				reduces++
				for k, sc := range p.full {
					if next[k] != sc.h {
						t.Errorf("%+v run %d scale %d: rows end at %d of %d", c, reduces, k, next[k], sc.h)
					}
				}
			}
		}
		if reduces != runs || runs < 1 {
			t.Errorf("%+v: %d reductions for %d runs", c, reduces, runs)
		}
	}
}

// setKeep sets forceKeep (nil: the plan chooses), as cudatest.EachKeep and
// StripsKeptAndRecomputed ask.
func setKeep(k *bool) { forceKeep = k }
