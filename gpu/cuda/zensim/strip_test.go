package zensim

import (
	"context"
	"errors"
	"fmt"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// stripCases are the geometries the strip tests run: the smallest band
// (128 rows: every crop mostly halo) with a short last band whose crop
// starts further up and comes out taller than the others, heights that
// are no multiple of anything, a band that is no multiple of the
// alignment (rounded down), widths with 2, 3 and 4 scales and past 512
// (zensim's extra padded columns), and a band as tall as the image (one
// strip).
var stripCases = []struct{ w, h, band int }{
	{50, 520, 128}, {37, 777, 256}, {20, 651, 128}, {97, 1031, 200}, {9, 461, 128}, {600, 1500, 512}, {40, 200, 400}, {64, 1000, 384},
}

// The spec is gpu/webgpu/zensim's (plan.go), so that both runtimes cut an
// image into the same bands; and the plan's geometry is what strip.go's
// argument rests on: crops start on the alignment, every band's crop at
// every scale is the image's rows from C0>>s (the last crop ending where
// the image's scale ends), every zensim strip of every scale has exactly
// one band, and each band's crop holds every row its strips read.
func TestStripGeometry(t *testing.T) {
	if stripSpec != (strips.Spec{Halo: 128, Align: 128, MinCrop: 256}) {
		t.Errorf("strip spec %+v, gpu/webgpu/zensim's is {128 128 256}", stripSpec)
	}
	for _, c := range append(stripCases, struct{ w, h, band int }{4000, 9001, 1024}, struct{ w, h, band int }{8, 8, 128}) {
		p, err := planStrips(c.w, c.h, func(int) int64 { return 0 }, -1, c.band)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		for sc, d := range p.img {
			owned := make([]int, nstrips(d[1]))
			for i, b := range p.bands {
				if b.C0%stripAlign != 0 || len(b.dims) != len(p.img) || b.dims[sc][0] != d[0] || b.dims[sc][1] != b.Rows()>>sc {
					t.Fatalf("%+v band %d: crop %+v, dims %v", c, i, b.Strip, b.dims)
				}
				if b.C1 == c.h && b.C0>>sc+b.dims[sc][1] != d[1] {
					t.Errorf("%+v scale %d: the last crop ends at row %d, the image at %d", c, sc, b.C0>>sc+b.dims[sc][1], d[1])
				}
				for k := b.k0[sc]; k < b.k1[sc]; k++ {
					owned[k]++
				}
			}
			for k, n := range owned {
				if n != 1 {
					t.Errorf("%+v: strip %d of scale %d has %d bands", c, k, sc, n)
				}
			}
		}
		for i := range p.bands {
			if err := p.checkCover(&p.bands[i]); err != nil {
				t.Error(err)
			}
		}
		if p.rows > c.h || (c.band < c.h && len(p.bands) < 2) {
			t.Errorf("%+v: %d bands of %d crop rows", c, len(p.bands), p.rows)
		}
	}
}

// The plan follows the budget: everything fits → one band with the
// reference kept, exactly a whole image's memory; less → more bands, each
// plan within its budget; the slot and reference buffer lists are
// exactly the modelled memory; a budget below any plan is an
// OutOfMemoryError (ErrOutOfMemory, for the ladder), and Estimate
// (estimateStrips) follows.
func TestStripBudget(t *testing.T) {
	w, h := 1500, 3000
	rawOf := func(rows int) int64 { return worstRaw(w, rows) }
	one, err := newStripPlan(w, h, []strips.Strip{{Y0: 0, Y1: h, C0: 0, C1: h}}, true)
	if err != nil {
		t.Fatal(err)
	}
	full := one.memory(worstRaw(w, h))
	if whole := estimate(w, h, worstRaw(w, h)); full != whole {
		t.Errorf("one band: %d bytes, the whole image %d", full, whole)
	}
	plan := func(budget int64) (cudatest.BudgetPlan, error) {
		p, err := planStrips(w, h, rawOf, budget, 0)
		if err != nil {
			return cudatest.BudgetPlan{}, err
		}
		fa := cudatest.NewFake()
		fakeStrips(fa, p, rawOf(p.rows))
		return cudatest.BudgetPlan{Bands: len(p.bands), Rows: p.rows, Keep: p.keep, Memory: p.memory(rawOf(p.rows)), Held: cudatest.Held(fa)}, nil
	}
	cudatest.StripOneBand(t, full, plan)
	cudatest.StripBudgets(t, full, []float64{0.9, 0.6, 0.4, 0.25, 0.15}, plan)
	if _, err := planStrips(w, h, rawOf, 1<<20, 0); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("a 1 MiB budget: %v, want ErrOutOfMemory", err)
	}
	cudatest.StripEstimates(t, func(budget int64) (int64, bool) { return estimateStrips(w, h, budget) }, full/4)
	if _, ok := estimateStrips(7, h, -1); ok {
		t.Error("estimateStrips below the minimum accepted")
	}
}

// fakeStrips allocates a strip reference's and slot's buffers with fa,
// in prepareStrips' and fillStripSlot's order.
func fakeStrips(fa *cudaemu.FakeAlloc, p *stripPlan, raw int64) (*stripRun, *stripSlot) {
	sr := &stripRun{k: newKernels(), p: p}
	sizes := p.refSizes()
	sr.tab = fa.Alloc(sizes[0])
	sizes = sizes[1:]
	if p.keep {
		for _, b := range p.bands {
			var pyr []*cuda.Buffer
			for range b.dims {
				pyr = append(pyr, fa.Alloc(sizes[0]))
				sizes = sizes[1:]
			}
			sr.kept = append(sr.kept, pyr)
		}
	}
	s := &stripSlot{}
	fillStripSlot(s, p, raw, fa.Alloc)
	return sr, s
}

// recordStrips records a strip prepare (the kept bands' reference
// halves) and score over p as the host queues them, every upload in
// chunks of chunkRows rows and 3 bytes, checking that a chunk's ready
// converts only rows whose bytes have arrived, and hands each launch to
// check.
func recordStrips(t *testing.T, sr *stripRun, s *stripSlot, ref, dist *zenmetrics.Image, chunkRows int, check func(int, cudaemu.Launch)) {
	t.Helper()
	var rec cudaemu.Recorder
	chunk := int64(chunkRows)*int64(max(ref.Stride, dist.Stride)) + 3
	up := func(dst *cuda.Buffer, src []byte, ready func(int64) error) error {
		if dst != s.raw || int64(len(src)) > dst.Size {
			t.Fatalf("upload of %d bytes into %+v", len(src), dst)
		}
		for _, end := range cudatest.ChunkEnds(int64(len(src)), chunk) {
			n := len(rec.L)
			if err := ready(end); err != nil {
				return err
			}
			for _, l := range rec.L[n:] {
				// xyb's w, y1, stride, channels, bps.
				w, y1, stride, ch, bps := l.Args[2].(int), l.Args[8].(int), l.Args[9].(int), l.Args[10].(int), l.Args[11].(int)
				if int64(stride)*int64(y1-1)+int64(w*ch*bps) > end {
					t.Errorf("row %d converted with %d bytes arrived", y1-1, end)
				}
			}
		}
		return nil
	}
	for i := range sr.kept {
		if err := sr.queueBandRef(&rec, up, &s.slot, i, ref, sr.kept[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sr.queueScore(&rec, up, s, ref, dist); err != nil {
		t.Fatal(err)
	}
	for i, l := range rec.L {
		check(i, l)
	}
}

// The strip launches (TestLaunchPlan's checks over every band: argument
// kinds, grids, buffer sizes, nothing read before written, each crop
// converted whole from its first image row, the band's reference pyramid
// read at every scale, every row a strip reads inside its band's crop)
// sum every zensim strip of every scale exactly once over the bands,
// before the merge of its scale, and merge each scale once.
func TestStripLaunchPlan(t *testing.T) {
	sigs := cudatest.Signatures(t, kernelSource)
	formats := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.GrayA16, zenmetrics.RGB16}
	for i, c := range stripCases {
		for _, keep := range []bool{true, false} {
			p, err := planStrips(c.w, c.h, func(int) int64 { return 0 }, -1, c.band)
			if err != nil {
				t.Fatal(err)
			}
			p.keep = keep
			rf, df := formats[i%len(formats)], formats[(i+1)%len(formats)]
			ref, _ := metrictest.Synthetic(c.w, c.h, 3, rf)
			_, dist := metrictest.Synthetic(c.w, c.h, 3, df)
			dist = padded(dist)
			raw := max(cropRaw(c.w, p.rows, ref.Stride, ref.Format), cropRaw(c.w, p.rows, dist.Stride, dist.Format))
			fa := cudatest.NewFake()
			sr, s := fakeStrips(fa, p, raw)
			name := fmt.Sprintf("%dx%d_band%d_keep%v", c.w, c.h, c.band, keep)
			ch := newChecker(t, sigs, p.geom, layoutOf(ref), layoutOf(dist))
			ch.refOf = func(i int) []*cuda.Buffer {
				if keep {
					return sr.kept[i]
				}
				return s.ref
			}
			ch.Wrote(s.raw, sr.tab, s.flag)
			recordStrips(t, sr, s, ref, dist, 5, ch.check)
			ch.done(name)
			if ch.conv[0] != len(p.bands) {
				t.Errorf("%s: %d reference crops converted, %d bands", name, ch.conv[0], len(p.bands))
			}
			if !ch.Written[s.res.Ptr] {
				t.Errorf("%s: no results", name)
			}
		}
	}
}

// emulateStrips records a strip prepare and score over p as the host
// queues them (uploads in chunks of 5 rows and a bit), replays them with
// the emulator and pools the read-back.
func emulateStrips(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image, p *stripPlan) *cpuz.Result {
	t.Helper()
	w, h := ref.Width, ref.Height
	fa := cudatest.NewFake()
	raw := max(cropRaw(w, p.rows, ref.Stride, ref.Format), cropRaw(w, p.rows, dist.Stride, dist.Format))
	sr, s := fakeStrips(fa, p, raw)
	rp := cudatest.NewReplay(t, emu, fa.Bufs)
	// As an overlapped strip upload: after the launches queued so far
	// (StripUpload waits for them), the bytes, then the conversions in
	// chunks of 5 rows and a bit.
	up := rp.Chunked(5*int64(ref.Stride) + 3)
	rp.Run.Upload(sr.tab, tabBytes())
	for i := range sr.kept {
		if err := sr.queueBandRef(&rp.Rec, up, &s.slot, i, ref, sr.kept[i]); err != nil {
			t.Fatal(err)
		}
	}
	_ = rp.Upload(s.flag, make([]byte, 4)) // Stream.Zero
	if err := sr.queueScore(&rp.Rec, up, s, ref, dist); err != nil {
		t.Fatal(err)
	}
	rp.Flush()
	rp.Run.Dump(s.res, resBytes)
	rp.Run.Dump(s.flag, 4)
	out := rp.Run.Run()
	return pool(w, h, len(p.img), append(out[0], out[1]...))
}

// TestEmulatedStrips runs zensim.cu on the CPU (cudaemu, opt-in with
// ZENMETRICS_CUDA_EMULATE=1) for strip scores, with the reference kept
// and recomputed, and compares their 228 features and score with the same
// kernels' whole-image result. Tolerance: none. Every value a band
// computes is the whole image's by construction (strip.go) and the merge
// adds the same strip sums in the same order, so the features must be
// bit-identical; the emulator's memory starts as NaN, so a strip no band
// summed, or a row a strip read outside its crop, fails too. The cases
// (4 sizes, each kept and recomputed; every crop shorter than the image):
// the smallest band (128 rows) with a last band of 8 rows whose crop
// starts further up and is taller than the others, 4 scales; odd heights
// (701, 777, 651) with last bands of 61, 9 and 11 rows; RGBA and 16-bit
// alpha (the background pattern is indexed by image row) and opaque 8-bit
// (the XYB chunks of 64 image rows decide the cube root) across crops
// starting at rows 128, 256, 384; a band that is no multiple of the
// alignment (200: 128); padded strides; 2 and 3 scales; identical images
// (the flag across bands: exactly 100).
func TestEmulatedStrips(t *testing.T) {
	emu := cudaemu.Build(t, source())
	cases := []struct {
		w, h, band int
		rf, df     zenmetrics.PixelFormat
		pad        bool
	}{
		{50, 520, 128, zenmetrics.RGB8, zenmetrics.RGB8, false},
		{37, 701, 128, zenmetrics.RGBA8, zenmetrics.RGBA8, true},
		{20, 777, 200, zenmetrics.GrayA16, zenmetrics.RGB8, false},
		{9, 651, 128, zenmetrics.RGB16, zenmetrics.RGBA16, true},
	}
	differ, n := 0, 0
	for i, c := range cases {
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(60+i), c.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(60+i), c.df)
		if c.pad {
			ref, dist = padded(ref), padded(dist)
		}
		want := emulate(t, emu, ref, dist)
		for _, keep := range []bool{true, false} {
			p, err := planStrips(c.w, c.h, func(int) int64 { return 0 }, -1, c.band)
			if err != nil {
				t.Fatal(err)
			}
			p.keep = keep
			name := fmt.Sprintf("%dx%d_%v_%v_band%d_keep%v", c.w, c.h, c.rf, c.df, c.band, keep)
			got := emulateStrips(t, emu, ref, dist, p)
			d, _, ds, err := diffResults(name, got, want, 0, 0)
			t.Logf("%s: %d strips of %d crop rows: zensim %.15g, whole image %.15g (|Δ| %.2g); %d of %d features differ",
				name, len(p.bands), p.rows, got.Score, want.Score, ds, d, len(want.Features))
			if err != nil || len(p.bands) < 3 || p.rows >= c.h {
				t.Errorf("%s: strips differ from the whole image (%v), or too few bands, or crops as tall as the image", name, err)
			}
			differ, n = differ+d, n+len(want.Features)
		}
	}
	// Identical images through strips: no band sets the flag.
	ref, _ := metrictest.Synthetic(30, 300, 8, zenmetrics.RGBA8)
	p, err := planStrips(30, 300, func(int) int64 { return 0 }, -1, 128)
	if err != nil {
		t.Fatal(err)
	}
	p.keep = false
	if got := emulateStrips(t, emu, ref, padded(ref), p); got.Score != 100 {
		t.Errorf("identical images in %d strips: %v, want exactly 100", len(p.bands), got.Score)
	}
	t.Logf("%d features in all: %d differ from the whole image's", n, differ)
}

// TestStripsGPU compares strip scores (features and score) with the whole
// image's on a device, with the reference kept and recomputed, over
// forced strip heights, then four callers at once on one strip reference.
// Tolerance: none, as TestEmulatedStrips says (the same kernels, the same
// values, the same float64 chains). Skipped without a device, failed
// under ZENMETRICS_REQUIRE_CUDA=1.
func TestStripsGPU(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	defer setKeep(nil)
	sizes := []struct{ w, h, band int }{{50, 520, 128}, {37, 777, 256}, {131, 1031, 128}, {1000, 777, 128}, {1920, 1080, 256}, {517, 2049, 1000}, {600, 300, 128}}
	for i, c := range sizes {
		f := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.GrayA16, zenmetrics.RGB16}[i%4]
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(90+i), f)
		wr, err := b.Prepare(ctx, zenmetrics.Zensim, ref, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := wr.(*reference).ScoreDetail(ctx, dist)
		wr.Release()
		if err != nil {
			t.Fatal(err)
		}
		var got *cpuz.Result
		var same zenmetrics.Score
		score := func(r zenmetrics.Reference) error {
			var err, serr error
			got, err = r.(*stripRef).ScoreDetail(ctx, dist)
			same, serr = r.Score(ctx, padded(ref))
			return errors.Join(err, serr)
		}
		cudatest.EachKeep(t, b, zenmetrics.Zensim, ref, zenmetrics.Options{}, c.band, fmt.Sprintf("%+v", c), setKeep, score, func(run cudatest.StripRun) {
			name := fmt.Sprintf("%dx%d_%v_band%d_keep%v", c.w, c.h, f, c.band, run.Keep)
			d, _, _, derr := diffResults(name, got, want, 0, 0)
			t.Logf("%s: %d strips (kept %v, %v): zensim %.17g, whole %.17g, %d features differ", name, run.N, run.Kept, run.OK, got.Score, want.Score, d)
			if !run.Good() || derr != nil || same.Value != 100 {
				t.Errorf("%s: strips differ from the whole image (%v), or identical images score %v", name, derr, same.Value)
			}
		})
	}
	// Four callers at once on one strip reference, kept and recomputed.
	cudatest.StripsKeptAndRecomputed(t, b, zenmetrics.Zensim, setKeep)
}

// Out of memory, the ladder's way: with the free memory capped at a third
// of a whole image's estimate, the whole image is refused with
// ErrOutOfMemory while Estimate(ModeStrip) proposes a plan within the
// strip budget and strips score it as the whole image; with a cap below
// any plan, a strip prepare is refused with ErrOutOfMemory before anything
// is allocated and Estimate declines strips (the ladder goes on to the
// CPU): cudatest.StripsUnderCap. Skipped without a device.
func TestStripsOutOfMemoryGPU(t *testing.T) {
	ref, dist := metrictest.SyntheticPair(1200, 2400, 4)
	cudatest.StripsUnderCap(t, backend(t), zenmetrics.Zensim, ref, dist)
}

// BenchmarkStrips is cudatest.Bench.Strips: cached strip scores at 16 and
// 64 MP with the free memory capped at a quarter of the whole image's.
func BenchmarkStrips(b *testing.B) { bench.Strips(b) }

// setKeep sets forceKeep (nil: the plan chooses), as cudatest.EachKeep and
// StripsKeptAndRecomputed ask.
func setKeep(k *bool) { forceKeep = k }
