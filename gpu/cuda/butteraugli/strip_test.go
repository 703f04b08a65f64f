package butteraugli

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

// Strip tolerances (strips against the same kernels' whole image). The
// interiors are the whole map's values by construction (strip.go), so the
// map and its maximum (Value) must be bit-identical. The power sums are
// reduced per band and added on the host, a different summation order
// than the whole image's reduction tree: over n ≤ 1e6 values of one sign
// the relative difference stays within n·2^-53 ≈ 1e-10, far below any
// real mistake (a missing or doubled row moves a norm by ~1/h).
const tolStripNorm = 1e-10

// The halo is gpu/webgpu/butteraugli's 84 rows: the chain's reach (41)
// doubled for the half level, plus its subsampling and upsampling rows.
func TestStripSpec(t *testing.T) {
	if stripSpec.Halo != 84 || stripSpec.Align != 2 || stripSpec.MinCrop != 16 {
		t.Errorf("strip spec %+v, want halo 84, align 2, min crop 16", stripSpec)
	}
}

// The plan follows the budget and its model is exactly the buffers the
// reference and a slot take; a budget below any plan is an
// OutOfMemoryError.
func TestStripBudget(t *testing.T) {
	w, h := 1200, 2500
	rawOf := func(rows int) int64 { return 8 * int64(w) * int64(rows) }
	full := estimate(w, h, 2, rawOf(h))
	cudatest.StripBudgets(t, full, []float64{1.1, 0.8, 0.5, 0.3, 0.15, 0.08}, func(budget int64) (cudatest.BudgetPlan, error) {
		p, err := planStrips(w, h, 2, rawOf, budget, 0)
		if err != nil {
			return cudatest.BudgetPlan{}, err
		}
		fa := cudatest.NewFake()
		fa.Alloc(4 * 256)
		fa.Alloc(4 * 65536)
		if p.keep {
			for _, b := range p.bands {
				newSets(levels(w, b.Rows()), 2, fa.Alloc)
			}
		}
		fillStripSlot(&stripSlot{}, p, rawOf(p.rows), fa.Alloc)
		return cudatest.BudgetPlan{Bands: len(p.bands), Rows: p.rows, Keep: p.keep, Memory: p.memory(rawOf(p.rows)), Held: cudatest.Held(fa)}, nil
	})
	if _, err := planStrips(w, h, 2, rawOf, 1<<20, 0); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("a 1 MiB budget: %v, want ErrOutOfMemory", err)
	}
	cudatest.StripEstimates(t, func(budget int64) (int64, bool) { return estimateStrips(w, h, budget) }, full/5)
}

// A strip score's launches: each band's reduction covers exactly its
// interior rows of its crop's map, written to its own 8 doubles, and the
// interiors tile the image.
func TestStripLaunchPlan(t *testing.T) {
	for _, c := range []struct{ w, h, band int }{{40, 300, 32}, {31, 211, 84}, {64, 400, 150}, {20, 100, 500}} {
		for _, keep := range []bool{true, false} {
			rawOf := func(rows int) int64 { return 4 * int64(c.w) * int64(rows) }
			p, err := planStrips(c.w, c.h, 2, rawOf, -1, c.band)
			if err != nil {
				t.Fatal(err)
			}
			p.keep = keep
			ref, dist := metrictest.Synthetic(c.w, c.h, 5, zenmetrics.RGBA8)
			fa := cudatest.NewFake()
			sr, s := fakeStrips(fa, p, rawOf(p.rows))
			var rec cudaemu.Recorder
			up := func(dst *cuda.Buffer, src []byte) error {
				if dst != s.raw || int64(len(src)) > dst.Size {
					t.Fatalf("%+v: upload of %d bytes into %+v", c, len(src), dst)
				}
				return nil
			}
			next := 0
			for i, b := range p.bands {
				rec.L = nil
				if err := sr.queueBand(&rec, up, s, i, ref, dist); err != nil {
					t.Fatal(err)
				}
				var red, parts *cudaemu.Launch
				for j := range rec.L {
					switch rec.L[j].K.Name {
					case "reduce_map":
						red = &rec.L[j]
					case "reduce_partials":
						parts = &rec.L[j]
					}
				}
				lo, hi := b.Window()
				if red == nil || parts == nil {
					t.Fatalf("%+v band %d: no reduction", c, i)
				}
				dm := red.Args[0].(*cuda.Buffer)
				if dm.Ptr != s.ws[0].dm.Ptr+cuda.DevPtr(4*lo*c.w) || red.Args[1].(int) != (hi-lo)*c.w {
					t.Errorf("%+v band %d: reduces %d values at %#x, want rows [%d,%d)", c, i, red.Args[1], dm.Ptr-s.ws[0].dm.Ptr, lo, hi)
				}
				if tot := parts.Args[2].(*cuda.Buffer); tot.Ptr != s.tots.Ptr+cuda.DevPtr(64*i) {
					t.Errorf("%+v band %d: sums at %#x", c, i, tot.Ptr-s.tots.Ptr)
				}
				if b.Y0 != next || b.C0%2 != 0 {
					t.Errorf("%+v band %d: %+v after row %d", c, i, b, next)
				}
				next = b.Y1
			}
			if next != c.h {
				t.Errorf("%+v: interiors end at %d", c, next)
			}
		}
	}
}

// fakeStrips allocates a strip reference's and slot's buffers with fa.
func fakeStrips(fa *cudaemu.FakeAlloc, p *stripPlan, raw int64) (*stripRun, *stripSlot) {
	sr := &stripRun{k: newKernels(), p: p, intensity: 80}
	sr.lut[1], sr.lut[2] = fa.Alloc(4*256), fa.Alloc(4*65536)
	if p.keep {
		for _, b := range p.bands {
			sr.kept = append(sr.kept, newSets(levels(p.w, b.Rows()), p.variants, fa.Alloc))
		}
	}
	s := &stripSlot{}
	fillStripSlot(s, p, raw, fa.Alloc)
	return sr, s
}

// emulateStrips records a strip prepare and score over p, replays them
// with the emulator and returns (max, 3-norm, p-norm) and the map.
func emulateStrips(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image, opt zenmetrics.Options, p *stripPlan) ([3]float64, []float32) {
	t.Helper()
	w, h := p.w, p.h
	fa := cudatest.NewFake()
	raw := max(cuda.RawBytes(strips.Crop(ref, 0, p.rows)), cuda.RawBytes(strips.Crop(dist, 0, p.rows)))
	sr, s := fakeStrips(fa, p, raw)
	sr.pnorm = opt.PNorm
	rp := cudatest.NewReplay(t, emu, fa.Bufs)
	run, rec, flush, up := rp.Run, &rp.Rec, rp.Flush, rp.Upload
	run.Upload(sr.lut[1], lutTable(1))
	run.Upload(sr.lut[2], lutTable(2))
	for i := range sr.kept {
		if err := sr.queueBandRef(rec, up, &s.slot, i, ref, sr.kept[i]); err != nil {
			t.Fatal(err)
		}
	}
	var maps []int
	for i := range p.bands {
		if err := sr.queueBand(rec, up, s, i, ref, dist); err != nil {
			t.Fatal(err)
		}
		flush()
		maps = append(maps, run.Dump(s.ws[0].dm, 4*int64(w)*int64(p.bands[i].Rows())))
	}
	tots := run.Dump(s.tots, 64*int64(len(p.bands)))
	out := run.Run()
	dm := make([]float32, 0, w*h)
	for i, b := range p.bands {
		lo, hi := b.Window()
		for j := lo * w; j < hi*w; j++ {
			dm = append(dm, math.Float32frombits(binary.LittleEndian.Uint32(out[maps[i]][4*j:])))
		}
	}
	sums := combine(out[tots], len(p.bands))
	n := float64(w * h)
	res := [3]float64{sums[0], norm(sums[1:4], n, 3), 0}
	if opt.PNorm > 0 {
		res[2] = norm(sums[4:7], n, opt.PNorm)
	}
	return res, dm
}

// TestEmulatedStrips runs butteraugli.cu on the CPU (cudaemu, opt-in with
// ZENMETRICS_CUDA_EMULATE=1) for strip scores, the reference kept and
// recomputed, against the same kernels' whole image: map and maximum
// bit-identical, norms within tolStripNorm (relative).
func TestEmulatedStrips(t *testing.T) {
	emu := cudaemu.Build(t, source())
	cases := []struct {
		w, h, band int
		rf, df     zenmetrics.PixelFormat
		opt        zenmetrics.Options
	}{
		// Small: the emulator runs a thread per CUDA thread.
		{16, 420, 48, zenmetrics.RGB8, zenmetrics.RGB8, zenmetrics.Options{PNorm: 2}},   // short bands (crops mostly halo), the middle crops inside the image
		{15, 341, 84, zenmetrics.RGBA8, zenmetrics.RGB16, zenmetrics.Options{PNorm: 3}}, // bands of about one halo, odd sizes, alpha, a half level
	}
	for i, c := range cases {
		if c.h <= c.band+2*stripSpec.Halo {
			t.Fatalf("case %d: %d rows leave no crop inside the image", i, c.h)
		}
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(60+i), c.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(60+i), c.df)
		want, wantMap := emulate(t, emu, ref, dist, c.opt)
		variants := 1
		if ref.Format.HasAlpha() {
			variants = 2
		}
		for _, keep := range []bool{true, false} {
			p, err := planStrips(c.w, c.h, variants, func(int) int64 { return 0 }, -1, c.band)
			if err != nil {
				t.Fatal(err)
			}
			p.keep = keep
			name := fmt.Sprintf("%dx%d_%v_%v_band%d_keep%v", c.w, c.h, c.rf, c.df, c.band, keep)
			got, gotMap := emulateStrips(t, emu, ref, dist, c.opt, p)
			differ := 0
			for j := range gotMap {
				if math.Float32bits(gotMap[j]) != math.Float32bits(wantMap[j]) {
					differ++
				}
			}
			e := [2]float64{relDiff(got[1], want[1]), relDiff(got[2], want[2])}
			t.Logf("%s: %d strips of %d crop rows: max %.17g (whole %.17g), norms rel %.2g %.2g; %d map values differ",
				name, len(p.bands), p.rows, got[0], want[0], e[0], e[1], differ)
			if len(gotMap) != len(wantMap) || differ > 0 || got[0] != want[0] || e[0] > tolStripNorm || e[1] > tolStripNorm || math.IsNaN(got[1]) {
				t.Errorf("%s: strips differ from the whole image", name)
			}
		}
	}
}

// TestStripsGPU compares strip scores with the whole image's on a device
// (kept and recomputed references, forced strip heights): map and Value
// bit-identical, norms within tolStripNorm. Skipped without a device,
// failed under ZENMETRICS_REQUIRE_CUDA=1.
func TestStripsGPU(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	defer setKeep(nil)
	sizes := []struct{ w, h, band int }{{40, 300, 32}, {131, 411, 84}, {1000, 777, 84}, {1920, 1080, 256}, {517, 2049, 1000}}
	for i, c := range sizes {
		f := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.GrayA16, zenmetrics.RGB16}[i%4]
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(80+i), f)
		opt := zenmetrics.Options{DistMap: true, PNorm: 2}
		want := scoreGPU(t, b, ref, dist, opt)
		var got zenmetrics.Score
		score := func(r zenmetrics.Reference) (err error) { got, err = r.Score(ctx, dist); return err }
		cudatest.EachKeep(t, b, zenmetrics.Butteraugli, ref, opt, c.band, fmt.Sprintf("%+v", c), setKeep, score, func(run cudatest.StripRun) {
			differ := cudatest.MapsDiffer(got, want)
			e3, ep := relDiff(got.Extras["pnorm3"], want.Extras["pnorm3"]), relDiff(got.Extras["pnorm"], want.Extras["pnorm"])
			t.Logf("%dx%d %v band %d: %d strips (kept %v): max %.17g (whole %.17g), norms rel %.2g %.2g, %d map values differ",
				c.w, c.h, f, c.band, run.N, run.Kept, got.Value, want.Value, e3, ep, differ)
			if !run.Good() || got.Value != want.Value || differ > 0 || e3 > tolStripNorm || ep > tolStripNorm {
				t.Errorf("%+v keep %v: strips differ from the whole image", c, run.Keep)
			}
		})
	}
	// Four callers at once on one strip reference, kept and recomputed.
	cudatest.StripsKeptAndRecomputed(t, b, zenmetrics.Butteraugli, setKeep)
}

// BenchmarkStrips is cudatest.Bench.Strips: cached strip scores at 16 and
// 64 MP with the free memory capped at a quarter of the whole image's.
func BenchmarkStrips(b *testing.B) { bench.Strips(b) }

// setKeep sets forceKeep (nil: the plan chooses), as cudatest.EachKeep and
// StripsKeptAndRecomputed ask.
func setKeep(k *bool) { forceKeep = k }
