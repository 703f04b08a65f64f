package dssim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// stripCases are the geometries the strip tests run: bands of one
// alignment (16 rows, every crop mostly halo), of one halo (64), uneven
// ones, a last band shorter than the others, heights that are no multiple
// of anything, and a band as tall as the image (one strip).
var stripCases = []struct{ w, h, band int }{
	{40, 200, 16}, {37, 141, 64}, {64, 200, 48}, {33, 97, 32}, {131, 300, 64}, {50, 90, 200}, {19, 129, 112},
}

// The bands' interiors tile every scale's rows of the image exactly once,
// each interior row keeps at least 4 rows of crop context on either side
// at its scale (or sits at the image's own edge there), and crops start
// on the alignment: what strip.go's bit-exactness argument rests on.
func TestStripGeometry(t *testing.T) {
	for _, c := range append(stripCases, struct{ w, h, band int }{1000, 4099, 256}, struct{ w, h, band int }{9, 33, 16}) {
		p, err := planStrips(c.w, c.h, func(int) int64 { return 0 }, -1, c.band)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		for sc, d := range p.dims {
			next := 0
			for i, b := range p.bands {
				if b.C0%stripAlign != 0 || len(b.dims) != len(p.dims) || b.dims[sc][0] != d[0] {
					t.Fatalf("%+v band %d: crop %+v, dims %v", c, i, b.Strip, b.dims)
				}
				lo, hi := b.lo[sc], b.hi[sc]
				if lo+b.C0>>sc != next || hi > b.dims[sc][1] {
					t.Fatalf("%+v scale %d band %d: window [%d,%d) at image row %d, expected %d", c, sc, i, lo, hi, lo+b.C0>>sc, next)
				}
				if (lo < 4 && b.C0 != 0) || (b.dims[sc][1]-hi < 4 && b.C1 != c.h) {
					t.Errorf("%+v scale %d band %d: window [%d,%d) of %d rows leaves under 4 rows of context", c, sc, i, lo, hi, b.dims[sc][1])
				}
				if b.C1 == c.h && b.C0>>sc+b.dims[sc][1] != d[1] {
					t.Errorf("%+v scale %d: the last crop ends at row %d, the image at %d", c, sc, b.C0>>sc+b.dims[sc][1], d[1])
				}
				next = hi + b.C0>>sc
			}
			if next != d[1] {
				t.Errorf("%+v scale %d: interiors end at %d of %d rows", c, sc, next, d[1])
			}
		}
	}
}

// The plan follows the budget (down to ~15% of a whole image: the maps of
// every scale, ~5.3 bytes per pixel, stay whole): everything fits → one band with the
// reference kept; less → more bands, each plan within the budget; the
// slot and reference buffer lists are exactly the modelled memory; a
// budget below any plan is an OutOfMemoryError.
func TestStripBudget(t *testing.T) {
	w, h := 1500, 3000
	rawOf := func(rows int) int64 { return worstRaw(w, rows) }
	// One band holds the whole image's buffers and the maps of every
	// scale: a little more than a whole-image reference.
	full := newStripPlan(w, h, []strips.Strip{{Y0: 0, Y1: h, C0: 0, C1: h}}, true).memory(worstRaw(w, h))
	if whole := estimate(w, h, worstRaw(w, h)); full < whole || full > whole+whole/10 {
		t.Errorf("one band: %d bytes, the whole image %d", full, whole)
	}
	plan := func(budget int64) (cudatest.BudgetPlan, error) {
		p, err := planStrips(w, h, rawOf, budget, 0)
		if err != nil {
			return cudatest.BudgetPlan{}, err
		}
		fa := cudatest.NewFake()
		for _, n := range p.refSizes() {
			fa.Alloc(n)
		}
		fillStripSlot(&stripSlot{}, p, rawOf(p.rows), fa.Alloc)
		return cudatest.BudgetPlan{Bands: len(p.bands), Rows: p.rows, Keep: p.keep, Memory: p.memory(rawOf(p.rows)), Held: cudatest.Held(fa)}, nil
	}
	cudatest.StripOneBand(t, full, plan)
	cudatest.StripBudgets(t, full, []float64{0.9, 0.6, 0.4, 0.25, 0.15}, plan)
	if _, err := planStrips(w, h, rawOf, 1<<20, 0); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("a 1 MiB budget: %v, want ErrOutOfMemory", err)
	}
	cudatest.StripEstimates(t, func(budget int64) (int64, bool) { return estimateStrips(w, h, budget) }, full/4)
}

// The strip score's launches: every ssim launch writes its owned rows
// inside the image's map of its scale, every map row of every scale is
// written exactly once over the bands, every unpack stays within its
// crop, and each scale is pooled once, over the image's map.
func TestStripLaunchPlan(t *testing.T) {
	for _, c := range stripCases {
		for _, keep := range []bool{true, false} {
			p, err := planStrips(c.w, c.h, func(int) int64 { return 0 }, -1, c.band)
			if err != nil {
				t.Fatal(err)
			}
			p.keep = keep
			ref, dist := metrictest.Synthetic(c.w, c.h, 3, zenmetrics.RGBA8)
			fa := cudatest.NewFake()
			sr, s := fakeStrips(fa, p, cuda.RawBytes(ref))
			var rec cudaemu.Recorder
			up := func(dst *cuda.Buffer, src []byte, ready func(int64) error) error {
				if dst != s.raw || int64(len(src)) > dst.Size {
					t.Fatalf("%+v: upload of %d bytes into %+v", c, len(src), dst)
				}
				return ready(int64(len(src)))
			}
			if err := sr.queueScore(&rec, up, s, ref, dist); err != nil {
				t.Fatal(err)
			}
			written := make([][]int, len(p.dims))
			for sc, d := range p.dims {
				written[sc] = make([]int, d[1])
			}
			pooled := make([]int, len(p.dims))
			for _, l := range rec.L {
				switch l.K.Name {
				case "ssim":
					w, h, lo, hi, row0 := l.Args[4].(int), l.Args[5].(int), l.Args[6].(int), l.Args[7].(int), l.Args[8].(int)
					sc := -1
					for i, m := range s.maps {
						if l.Args[9].(*cuda.Buffer) == m {
							sc = i
						}
					}
					if sc < 0 || w != p.dims[sc][0] || lo < 0 || hi > h || (hi+row0) > p.dims[sc][1] {
						t.Fatalf("%+v: ssim w %d h %d rows [%d,%d) at %d into map %d", c, w, h, lo, hi, row0, sc)
					}
					for y := lo; y < hi; y++ {
						written[sc][y+row0]++
					}
				case "unpack":
					if y1 := l.Args[4].(int); y1 > p.rows {
						t.Errorf("%+v: unpack to row %d of a %d-row crop", c, y1, p.rows)
					}
				case "row_sums":
					sc := -1
					for i, m := range s.maps {
						if l.Args[0].(*cuda.Buffer) == m {
							sc = i
						}
					}
					if sc < 0 || l.Args[1].(int) != p.dims[sc][0] || l.Args[2].(int) != p.dims[sc][1] {
						t.Fatalf("%+v: row_sums over %v", c, l.Args)
					}
					pooled[sc]++
				}
			}
			for sc := range p.dims {
				for y, n := range written[sc] {
					if n != 1 {
						t.Fatalf("%+v keep %v: scale %d row %d written %d times", c, keep, sc, y, n)
					}
				}
				if pooled[sc] != 1 {
					t.Errorf("%+v: scale %d pooled %d times", c, sc, pooled[sc])
				}
			}
		}
	}
}

// fakeStrips allocates a strip reference's and slot's buffers with fa.
func fakeStrips(fa *cudaemu.FakeAlloc, p *stripPlan, raw int64) (*stripRun, *stripSlot) {
	sr := &stripRun{k: newKernels(), p: p}
	sizes := p.refSizes()
	sr.lut = fa.Alloc(sizes[0])
	sizes = sizes[1:]
	if p.keep {
		for _, b := range p.bands {
			var pl planes
			for range b.dims {
				pl.img = append(pl.img, fa.Alloc(sizes[0]))
				pl.mu = append(pl.mu, fa.Alloc(sizes[1]))
				sizes = sizes[2:]
			}
			sr.kept = append(sr.kept, pl)
		}
	}
	s := &stripSlot{}
	fillStripSlot(s, p, raw, fa.Alloc)
	return sr, s
}

// emulateStrips records a strip prepare and score over p, replays them
// with the emulator and returns the DSSIM and scale 0's map.
func emulateStrips(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image, p *stripPlan) (float64, []float32) {
	t.Helper()
	w, h := ref.Width, ref.Height
	fa := cudatest.NewFake()
	raw := max(cropRaw(w, p.rows, ref.Stride, ref.Format), cropRaw(w, p.rows, dist.Stride, dist.Format))
	sr, s := fakeStrips(fa, p, raw)
	rp := cudatest.NewReplay(t, emu, fa.Bufs)
	// As an overlapped upload: the bytes first, then the unpacks in
	// chunks of 5 rows and a bit.
	up := rp.Chunked(5*int64(ref.Stride) + 3)
	rp.Run.Upload(sr.lut, lutBytes())
	for i := range sr.kept {
		if err := sr.queueBandRef(&rp.Rec, up, &s.slot, i, ref, &sr.kept[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sr.queueScore(&rp.Rec, up, s, ref, dist); err != nil {
		t.Fatal(err)
	}
	rp.Flush()
	rp.Run.Dump(s.res, resBytes)
	rp.Run.Dump(s.maps[0], 4*int64(w*h))
	out := rp.Run.Run()
	res := make([]float64, 8*maxScales)
	for i := range res {
		res[i] = math.Float64frombits(binary.LittleEndian.Uint64(out[0][8*i:]))
	}
	dm := make([]float32, w*h)
	for i := range dm {
		dm[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[1][4*i:]))
	}
	return pool(p.dims, res), dm
}

// TestEmulatedStrips runs dssim.cu on the CPU (cudaemu, opt-in with
// ZENMETRICS_CUDA_EMULATE=1) for strip scores, with the reference kept and
// recomputed, and compares them with the same kernels' whole-image score.
// Tolerance: none. The interiors are the whole image's map values by
// construction (strip.go) and the pooling runs over the same maps in the
// same order, so the maps and the DSSIM must be bit-identical; the
// emulator's memory starts as NaN, so a map row no strip wrote fails too.
// Alpha images check the background pattern's image-row indexing.
func TestEmulatedStrips(t *testing.T) {
	emu := cudaemu.Build(t, source())
	formats := []struct{ rf, df zenmetrics.PixelFormat }{
		{zenmetrics.RGB8, zenmetrics.RGB8}, {zenmetrics.RGBA8, zenmetrics.RGBA8}, {zenmetrics.RGB16, zenmetrics.GrayA16},
		{zenmetrics.GrayA8, zenmetrics.RGBA16}, {zenmetrics.RGBA16, zenmetrics.RGB8}, {zenmetrics.Gray8, zenmetrics.Gray8}, {zenmetrics.RGBA8, zenmetrics.RGB16},
	}
	// Smaller than stripCases: the emulator runs one OS thread per CUDA
	// thread. Bands of one alignment (most of each crop halo), crops
	// starting below row 0 with alpha (the background pattern's image
	// rows), a padded stride, a last band shorter than the others.
	cases := []struct{ w, h, band int }{{24, 180, 16}, {70, 260, 64}, {19, 129, 112}, {37, 141, 64}}
	for i, c := range cases {
		f := formats[i%len(formats)]
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(70+i), f.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(70+i), f.df)
		if i%2 == 1 {
			ref, dist = padded(ref), padded(dist)
		}
		want, _, wantMap := emulate(t, emu, ref, dist)
		if i == 1 && !ref.Format.HasAlpha() {
			t.Fatalf("case %d is meant to have alpha", i)
		}
		for _, keep := range []bool{true, false} {
			p, err := planStrips(c.w, c.h, func(int) int64 { return 0 }, -1, c.band)
			if err != nil {
				t.Fatal(err)
			}
			p.keep = keep
			name := fmt.Sprintf("%dx%d_%v_%v_band%d_keep%v", c.w, c.h, f.rf, f.df, c.band, keep)
			got, gotMap := emulateStrips(t, emu, ref, dist, p)
			differ := 0
			for j := range gotMap {
				if math.Float32bits(gotMap[j]) != math.Float32bits(wantMap[j]) {
					differ++
				}
			}
			t.Logf("%s: %d strips of %d crop rows: dssim %.17g, whole image %.17g; %d map values differ", name, len(p.bands), p.rows, got, want, differ)
			if got != want || differ > 0 || math.IsNaN(got) {
				t.Errorf("%s: strips differ from the whole image", name)
			}
		}
	}
}

// TestStripsGPU compares strip scores with the whole image's on a device,
// with the reference kept and recomputed, over forced strip heights.
// Tolerance: none, as TestEmulatedStrips says (the same kernels, the same
// maps, the same pooling order). Skipped without a device, failed under
// ZENMETRICS_REQUIRE_CUDA=1.
func TestStripsGPU(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	defer setKeep(nil)
	sizes := []struct{ w, h, band int }{{40, 200, 16}, {37, 141, 64}, {131, 300, 64}, {1000, 777, 128}, {1920, 1080, 256}, {517, 2049, 1000}}
	for i, c := range sizes {
		f := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.GrayA16, zenmetrics.RGB16}[i%4]
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(90+i), f)
		want := scoreGPU(t, b, ref, dist, zenmetrics.Options{DistMap: true})
		var got zenmetrics.Score
		score := func(r zenmetrics.Reference) (err error) { got, err = r.Score(ctx, dist); return err }
		cudatest.EachKeep(t, b, zenmetrics.DSSIM, ref, zenmetrics.Options{DistMap: true}, c.band, fmt.Sprintf("%+v", c), setKeep, score, func(run cudatest.StripRun) {
			differ := cudatest.MapsDiffer(got, want)
			t.Logf("%dx%d %v band %d: %d strips (kept %v, %v): dssim %.17g, whole %.17g, %d map values differ", c.w, c.h, f, c.band, run.N, run.Kept, run.OK, got.Value, want.Value, differ)
			if !run.Good() || got.Value != want.Value || differ > 0 {
				t.Errorf("%+v keep %v: strips differ from the whole image", c, run.Keep)
			}
		})
	}
	// Four callers at once on one strip reference, kept and recomputed.
	cudatest.StripsKeptAndRecomputed(t, b, zenmetrics.DSSIM, setKeep)
}

// BenchmarkStrips is cudatest.Bench.Strips: cached strip scores at 16 and
// 64 MP with the free memory capped at a quarter of the whole image's.
func BenchmarkStrips(b *testing.B) { bench.Strips(b) }

// setKeep sets forceKeep (nil: the plan chooses), as cudatest.EachKeep and
// StripsKeptAndRecomputed ask.
func setKeep(k *bool) { forceKeep = k }
