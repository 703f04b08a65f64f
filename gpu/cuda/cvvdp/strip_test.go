package cvvdp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// stripCases are the geometries the strip tests plan: the smallest
// strip (1 owned row per window), windows of one halo, awkward heights
// (odd, prime, a last window of a row or two), bands cut on the coarser
// levels too, and a strip height past the image (one window).
var stripCases = []struct {
	w, h, band int
	display    string
}{
	{40, 97, 1, ""}, {37, 141, 20, ""}, {64, 200, 16, ""}, {33, 75, 7, "standard_phone"}, {131, 300, 64, ""},
	{50, 90, 200, ""}, {19, 129, 112, ""}, {9, 33, 3, ""}, {1000, 4099, 256, ""}, {2, 100, 5, ""},
}

// stripPlanOf is the forced plan of a case.
func stripPlanOf(t *testing.T, w, h, band int, display string, keep, distMap bool) *stripPlan {
	t.Helper()
	p, err := cpucv.NewPlan(w, h, display)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := planStrips(p, func(rows int) int64 { return worstRaw(w, rows) }, distMap, -1, band)
	if err != nil {
		t.Fatalf("%dx%d band %d: %v", w, h, band, err)
	}
	sp.keep = keep
	return sp
}

// The windows of every band tile its rows exactly once with their owned
// rows, stay within the window planes, and keep the blur's halo of
// context around their owned rows (or the band's edge); the crops tile
// level 0. What strip.go's bit-exactness argument rests on.
func TestStripGeometry(t *testing.T) {
	for _, c := range stripCases {
		sp := stripPlanOf(t, c.w, c.h, c.band, c.display, false, false)
		p := sp.p
		if want := min(c.h, c.band+2*halo); sp.winRows != want {
			t.Errorf("%+v: %d window rows, want %d", c, sp.winRows, want)
		}
		for b := 0; b+1 < p.Levels; b++ {
			next := 0
			for i, win := range sp.windows(b) {
				if win.o0 != next || win.o1 <= win.o0 || win.w0 < 0 || win.w1 > p.H[b] || win.w0 > win.o0 || win.w1 < win.o1 {
					t.Fatalf("%+v band %d window %d: %+v after row %d", c, b, i, win, next)
				}
				if int64(p.W[b])*int64(win.rows()) > sp.winPx() {
					t.Errorf("%+v band %d window %d: %d rows of %d exceed the window planes' %d pixels", c, b, i, win.rows(), p.W[b], sp.winPx())
				}
				if (win.o0-win.w0 < halo && win.w0 != 0) || (win.w1-win.o1 < halo && win.w1 != p.H[b]) {
					t.Errorf("%+v band %d window %d: %+v leaves under %d rows of context", c, b, i, win, halo)
				}
				next = win.o1
			}
			if next != p.H[b] {
				t.Errorf("%+v band %d: windows end at row %d of %d", c, b, next, p.H[b])
			}
		}
		next := 0
		for _, cr := range sp.crops() {
			if cr[0] != next || cr[1] <= cr[0] || cr[1]-cr[0] > sp.winRows {
				t.Fatalf("%+v: crop %v after row %d", c, cr, next)
			}
			next = cr[1]
		}
		if next != c.h {
			t.Errorf("%+v: crops end at %d", c, next)
		}
	}
}

// The plan follows the budget: everything fits → one window, the
// reference kept, exactly a whole image's buffers; less → shorter
// windows (shorter again while the reference stays where it was), the
// reference on the host once kept windows would be short, each plan
// within its budget and its buffer lists exactly the modelled memory,
// down to a fifth of the whole image (a quarter with the map, whose
// planes stay whole); a budget below any plan is an OutOfMemoryError,
// and so is an image past the kernels' indexing.
func TestStripBudget(t *testing.T) {
	w, h := 1500, 3000
	p, err := cpucv.NewPlan(w, h, "")
	if err != nil {
		t.Fatal(err)
	}
	rawOf := func(rows int) int64 { return worstRaw(w, rows) }
	full := estimate(p, worstRaw(w, h), false)
	sp, err := planStrips(p, rawOf, false, full, 0)
	if err != nil || sp.winRows != h || !sp.keep || sp.memory(rawOf(h)) != full || len(sp.windows(0)) != 1 {
		t.Fatalf("the whole image's memory: %v, %+v", err, sp)
	}
	type prev struct {
		rows int
		keep bool
	}
	last := map[bool]prev{false: {h + 1, true}, true: {h + 1, true}}
	for _, frac := range []float64{0.9, 0.6, 0.4, 0.3, 0.25, 0.2} {
		for _, distMap := range []bool{false, true} {
			if distMap && frac < 0.25 {
				continue
			}
			budget := int64(frac * float64(full))
			sp, err := planStrips(p, rawOf, distMap, budget, 0)
			if err != nil {
				t.Fatalf("budget %.2f map %v: %v", frac, distMap, err)
			}
			raw := rawOf(sp.winRows)
			mem := sp.memory(raw)
			if l := last[distMap]; mem > budget || (sp.keep == l.keep && sp.winRows > l.rows) || (sp.keep && !l.keep) {
				t.Errorf("budget %.2f of %d: %d window rows (keep %v) use %d", frac, full, sp.winRows, sp.keep, mem)
			}
			if sp.keep && sp.winRows < longOwned+2*halo {
				t.Errorf("budget %.2f: the reference kept with %d-row windows", frac, sp.winRows)
			}
			last[distMap] = prev{sp.winRows, sp.keep}
			fa := cudatest.NewFake()
			fakeStripRef(fa, sp)
			s := &stripSlot{}
			fillStripSlot(s, sp, raw, fa.Alloc)
			if held := cudatest.Held(fa); held != mem || len(s.buffers()) != len(sp.slotSizes(raw)) {
				t.Errorf("budget %.2f: buffers hold %d, the model says %d", frac, held, mem)
			}
			t.Logf("budget %.2f of the whole image's %d MiB (map %v): %d-row windows, %d of band 0, keep %v, %d MiB",
				frac, full>>20, distMap, sp.winRows, len(sp.windows(0)), sp.keep, mem>>20)
		}
	}
	if _, err := planStrips(p, rawOf, false, 1<<20, 0); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("a 1 MiB budget: %v, want ErrOutOfMemory", err)
	}
	cudatest.StripEstimates(t, func(budget int64) (int64, bool) { return estimateStrips(p, budget) }, full/4)
	big, err := cpucv.NewPlan(26755, 26755, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := planStrips(big, rawOf, false, -1, 0); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("past the indexing: %v, want ErrOutOfMemory", err)
	}
}

// fakeStripRef allocates a strip reference's buffers with fa, in
// prepareStrips' order.
func fakeStripRef(fa *cudaemu.FakeAlloc, sp *stripPlan) *stripRun {
	sr := &stripRun{k: newKernels(), sp: sp}
	sizes := sp.refSizes()
	next := func() *cuda.Buffer { b := fa.Alloc(sizes[0]); sizes = sizes[1:]; return b }
	sr.ref.lut, sr.ref.kb = next(), next()
	if sp.keep {
		for b := 0; b+1 < sp.p.Levels; b++ {
			sr.ref.rp = append(sr.ref.rp, next())
			sr.ref.s = append(sr.ref.s, next())
		}
	}
	sr.ref.rb = next()
	if !sp.keep {
		sr.host = make([][][]byte, sp.p.Levels-1)
		for b := range sr.host {
			sr.host[b] = make([][]byte, len(sp.windows(b)))
		}
	}
	return sr
}

// The strip prepare's and score's launches, checked as TestLaunchPlan
// checks a whole image's (argument kinds, grids, buffer sizes, nothing
// read before it is written) and more: every unpack within its crop and
// after its bytes arrived, each band's windows computing within the
// band, the blur's context around the owned rows, and every row of every
// band summed exactly once.
func TestStripLaunchPlan(t *testing.T) {
	sigs := cudatest.Signatures(t, kernelSource)
	formats := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA16, zenmetrics.GrayA8}
	for i, c := range stripCases {
		for _, keep := range []bool{true, false} {
			for _, distMap := range []bool{false, true} {
				f := formats[i%len(formats)]
				sp := stripPlanOf(t, c.w, c.h, c.band, c.display, keep, distMap)
				p := sp.p
				name := fmt.Sprintf("%dx%d_%v_band%d_keep%v_map%v", c.w, c.h, f, c.band, keep, distMap)
				lay := layout{stride: c.w*f.BytesPerPixel() + 3, channels: f.Channels(), bps: f.BytesPerSample()}
				if f.IsGray() {
					lay.gray = 1
				}
				im := &zenmetrics.Image{Width: c.w, Height: c.h, Stride: lay.stride, Format: f, Pix: make([]byte, lay.stride*c.h)}
				fa := cudatest.NewFake()
				sr := fakeStripRef(fa, sp)
				s := &stripSlot{}
				fillStripSlot(s, sp, cuda.CropRaw(im, sp.winRows), fa.Alloc)
				side := func(written []*cuda.Buffer, run func(q *cudaemu.Recorder, crop cropUploader, up uploader) error) *checker {
					ck := newChecker(t, sigs, p, lay)
					ck.windowed = true
					ck.Wrote(append([]*cuda.Buffer{sr.ref.lut, sr.ref.kb}, written...)...)
					var rec cudaemu.Recorder
					done := 0
					flush := func() {
						for j, l := range rec.L[done:] {
							ck.check(done+j, l)
						}
						done = len(rec.L)
					}
					crop := func(dst *cuda.Buffer, src []byte, ready func(int64) error) error {
						flush()
						if dst != s.raw || int64(len(src)) > dst.Size {
							t.Fatalf("%s: crop upload of %d bytes into %+v", name, len(src), dst)
						}
						ck.Wrote(dst)
						for _, end := range cudatest.ChunkEnds(int64(len(src)), 2*int64(lay.stride)+1) {
							n := len(rec.L)
							if err := ready(end); err != nil {
								return err
							}
							for _, l := range rec.L[n:] {
								ry0, y1 := l.Args[5].(int), l.Args[7].(int)
								if int64(lay.stride)*int64(y1-1-ry0)+int64(c.w*f.BytesPerPixel()) > end {
									t.Errorf("%s: unpack of row %d queued with %d bytes of the crop from row %d", name, y1-1, end, ry0)
								}
							}
						}
						return nil
					}
					up := func(dst *cuda.Buffer, src []byte) error {
						flush()
						if (dst != s.rpW && dst != s.sW) || int64(len(src)) > dst.Size {
							t.Fatalf("%s: upload of %d bytes into %+v", name, len(src), dst)
						}
						ck.Wrote(dst)
						return nil
					}
					if err := run(&rec, crop, up); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					flush()
					if ck.rows != c.h {
						t.Errorf("%s: %d of %d rows unpacked", name, ck.rows, c.h)
					}
					return ck
				}
				saved := 0
				side(nil, func(q *cudaemu.Recorder, crop cropUploader, _ uploader) error {
					return sr.queuePrepare(q, crop, s, im, func(b, i int, win window) error {
						if win != sp.windows(b)[i] {
							t.Fatalf("%s: saved window %+v of band %d, planned %+v", name, win, b, sp.windows(b)[i])
						}
						sr.host[b][i] = make([]byte, 2*windowBytes(p, b, win))
						saved++
						return nil
					})
				})
				refPlanes := append(append([]*cuda.Buffer{sr.ref.rb}, sr.ref.rp...), sr.ref.s...)
				if !keep {
					n := 0
					for b := 0; b+1 < p.Levels; b++ {
						n += len(sp.windows(b))
					}
					if saved != n {
						t.Errorf("%s: %d windows saved of %d", name, saved, n)
					}
				}
				ck := side(refPlanes, func(q *cudaemu.Recorder, crop cropUploader, up uploader) error {
					return sr.queueScore(q, crop, up, s, im)
				})
				ck.ownedOnce(name)
				if !ck.Written[s.res.Ptr] || (distMap && !ck.Written[s.g[0].Ptr]) {
					t.Errorf("%s: the results or the map are never written", name)
				}
			}
		}
	}
}

// emulateStrips records a strip prepare and score (with the map) over sp,
// replays them with the emulator and returns the band sums and the map.
// The prepare is one session, whose dumps are the reference's planes (the
// host's windows, or the kept bands) and base band; the score another,
// which starts from them.
func emulateStrips(t *testing.T, emu *cudaemu.Emulator, sp *stripPlan, ref, dist *zenmetrics.Image) ([][nCh]float64, []float32) {
	t.Helper()
	p := sp.p
	fa := cudatest.NewFake()
	sr := fakeStripRef(fa, sp)
	s := &stripSlot{}
	fillStripSlot(s, sp, max(cuda.CropRaw(ref, sp.winRows), cuda.CropRaw(dist, sp.winRows)), fa.Alloc)
	session := func() (*cudaemu.Session, *cudaemu.Recorder, func(), cropUploader, uploader) {
		rp := cudatest.NewReplay(t, emu, fa.Bufs)
		rp.Run.Upload(sr.ref.lut, f32Bytes(lutFloats(p)))
		rp.Run.Upload(sr.ref.kb, f32Bytes(kbFloats(p)))
		// As an overlapped upload: the bytes first, then the unpacks in
		// chunks of 3 rows and a bit.
		return rp.Run, &rp.Rec, rp.Flush, rp.Chunked(3*int64(ref.Stride) + 5), rp.Upload
	}
	run, rec, flush, crop, _ := session()
	type saved struct{ b, i, at int }
	var wins []saved
	err := sr.queuePrepare(rec, crop, s, ref, func(b, i int, win window) error {
		flush()
		n := windowBytes(p, b, win)
		wins = append(wins, saved{b, i, run.Dump(s.rpW, n)})
		run.Dump(s.sW, n)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	flush()
	kept := append([]*cuda.Buffer{sr.ref.rb}, append(append([]*cuda.Buffer(nil), sr.ref.rp...), sr.ref.s...)...)
	at := make([]int, len(kept))
	for j, b := range kept {
		at[j] = run.Dump(b, b.Size)
	}
	out := run.Run()
	for _, wn := range wins {
		sr.host[wn.b][wn.i] = append(append([]byte(nil), out[wn.at]...), out[wn.at+1]...)
	}
	run, rec, flush, crop, up := session()
	for j, b := range kept {
		run.Upload(b, out[at[j]])
	}
	if err := sr.queueScore(rec, crop, up, s, dist); err != nil {
		t.Fatal(err)
	}
	flush()
	run.Dump(s.res, resBytes(p))
	run.Dump(s.g[0], 4*px(p, 0))
	out = run.Run()
	return readSums(p, out[0]), cuda.Float32s(out[1], int(px(p, 0)))
}

// TestEmulatedStrips runs cvvdp.cu on the CPU (cudaemu, opt-in with
// ZENMETRICS_CUDA_EMULATE=1) for strip scores, with the reference kept on
// the device and on the host, and compares them with the same kernels'
// whole-image score. Tolerance: none. Every window computes its rows from
// the same inputs with the same operations as the whole band, the owned
// rows tile every band, and the sums are added in the same order by the
// same kernels (strip.go), so every band sum, the JOD and every map value
// must be bit-identical; the emulator's memory starts as NaN, so a row
// no window wrote, or a window reading a row it does not hold, fails
// too. The cases: the smallest strip (one owned row per window), odd and
// prime heights, awkward strip heights, a strip past the image (one
// window), RGBA, grey and 16-bit pixels, a padded stride, a display with
// fewer bands.
func TestEmulatedStrips(t *testing.T) {
	emu := cudaemu.Build(t, source())
	cases := []struct {
		w, h, band int
		rf, df     zenmetrics.PixelFormat
		pad        bool
		display    string
	}{
		{40, 97, 1, zenmetrics.RGB8, zenmetrics.RGB8, false, ""},
		{37, 141, 20, zenmetrics.RGBA8, zenmetrics.RGBA8, true, ""},
		{30, 77, 16, zenmetrics.Gray8, zenmetrics.Gray8, false, ""},
		{33, 75, 7, zenmetrics.RGB16, zenmetrics.GrayA16, false, "standard_phone"},
		{24, 61, 9, zenmetrics.RGBA16, zenmetrics.RGB8, true, ""},
		{29, 50, 200, zenmetrics.GrayA8, zenmetrics.RGBA8, false, ""},
	}
	if testing.Short() {
		cases = cases[:2]
	}
	for i, c := range cases {
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(60+i), c.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(60+i), c.df)
		if c.pad {
			ref, dist = padded(ref), padded(dist)
		}
		p, err := cpucv.NewPlan(c.w, c.h, c.display)
		if err != nil {
			t.Fatal(err)
		}
		want, wantMap := emulate(t, emu, p, ref, dist)
		for _, keep := range []bool{true, false} {
			sp := stripPlanOf(t, c.w, c.h, c.band, c.display, keep, true)
			name := fmt.Sprintf("%dx%d_%v_%v_band%d_keep%v_%q", c.w, c.h, c.rf, c.df, c.band, keep, c.display)
			got, gotMap := emulateStrips(t, emu, sp, ref, dist)
			sums := 0
			for b := range got {
				for ch := 0; ch < nCh; ch++ {
					if math.Float64bits(got[b][ch]) != math.Float64bits(want[b][ch]) {
						sums++
					}
				}
			}
			differ := 0
			for j := range gotMap {
				if math.Float32bits(gotMap[j]) != math.Float32bits(wantMap[j]) {
					differ++
				}
			}
			jod, wjod := p.JOD(got), p.JOD(want)
			t.Logf("%s: %d levels, %d windows of band 0: JOD %.17g, whole image %.17g; %d sums and %d map values differ",
				name, p.Levels, len(sp.windows(0)), jod, wjod, sums, differ)
			if sums > 0 || differ > 0 || math.Float64bits(jod) != math.Float64bits(wjod) || math.IsNaN(jod) {
				t.Errorf("%s: strips differ from the whole image", name)
			}
		}
	}
}

// TestStripsGPU compares strip scores with the whole image's on a device,
// with the reference kept on the device and on the host, over forced
// strip heights, the map too. Tolerance: none, as TestEmulatedStrips says
// (the same kernels on the same inputs, the same sums in the same order).
// Skipped without a device, failed under ZENMETRICS_REQUIRE_CUDA=1.
func TestStripsGPU(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	defer setKeep(nil)
	sizes := []struct {
		w, h, band int
		display    string
	}{
		{40, 97, 1, ""}, {37, 141, 20, ""}, {131, 300, 64, "standard_phone"}, {1000, 777, 128, ""},
		{1920, 1080, 256, "standard_hdr_pq"}, {517, 2049, 1000, ""}, {3000, 4001, 333, ""},
	}
	for i, c := range sizes {
		f := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.GrayA16, zenmetrics.RGB16}[i%4]
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(90+i), f)
		opt := zenmetrics.Options{DistMap: true, Display: c.display}
		want := scoreGPU(t, b, ref, dist, opt)
		var got zenmetrics.Score
		score := func(r zenmetrics.Reference) (err error) { got, err = r.Score(ctx, dist); return err }
		cudatest.EachKeep(t, b, zenmetrics.CVVDP, ref, opt, c.band, fmt.Sprintf("%+v", c), setKeep, score, func(run cudatest.StripRun) {
			differ := cudatest.MapsDiffer(got, want)
			t.Logf("%dx%d %v band %d: %d strips (kept %v, %v): JOD %.17g, whole %.17g, %d map values differ",
				c.w, c.h, f, c.band, run.N, run.Kept, run.OK, got.Value, want.Value, differ)
			if !run.Good() || got.Value != want.Value || differ > 0 {
				t.Errorf("%+v keep %v: strips differ from the whole image", c, run.Keep)
			}
		})
	}
	// Four callers at once on one strip reference, kept and on the host.
	cudatest.StripsKeptAndRecomputed(t, b, zenmetrics.CVVDP, setKeep)
}

// TestStripsPlannedGPU lets Prepare plan the strips under a free-memory
// cap (SetFreeLimit): at a third of the whole image's estimate it takes
// several windows and scores as the whole image does; below any plan it
// is refused as ErrOutOfMemory (the ladder's cue to go on), before
// anything is allocated (cudatest.StripsUnderCap). Skipped without a
// device like TestStripsGPU.
func TestStripsPlannedGPU(t *testing.T) {
	b := backend(t)
	ref, dist := metrictest.Synthetic(2000, 3001, 7, zenmetrics.RGB8)
	cudatest.StripsUnderCap(t, b, zenmetrics.CVVDP, ref, dist)
}

// setKeep sets forceKeep (nil: the plan chooses), as cudatest.EachKeep and
// StripsKeptAndRecomputed ask.
func setKeep(k *bool) { forceKeep = k }
