package butteraugli

import (
	"math"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// The kernel sequences of one image at one level, written against a
// launcher and buffers only (no device, no uploads), so that the tests can
// replay them without a GPU and check every launch (launch_test.go).

// planeSet is the frequency decomposition of one image at one level; mac
// and mdc (the mask weights) exist for the reference only.
type planeSet struct {
	lf, mf   [3]*cuda.Buffer
	hf, uhf  [2]*cuda.Buffer
	act      *cuda.Buffer
	mac, mdc *cuda.Buffer
}

// work is one scorer's planes at one level: the linear planes (then the
// blur temporaries, then the AC terms), the B working plane, the distorted
// image's decomposition and the level's distance map.
type work struct {
	lin  [3]*cuda.Buffer
	res2 *cuda.Buffer
	dist planeSet
	dm   *cuda.Buffer
}

// slot is one scorer's device scratch with its worker (stream, staging).
type slot struct {
	wk   *cuda.Worker
	raw  *cuda.Buffer
	ws   []*work      // per level
	part *cuda.Buffer // reduce_map records
	tot  *cuda.Buffer // reduce_partials' 8 doubles
}

// size is a level's width and height.
type size struct{ w, h int }

// levels returns the level sizes computed for a w×h image: none below 8
// px, the half-resolution level only when it is at least 8 px.
func levels(w, h int) []size {
	if w < minSize || h < minSize {
		return nil
	}
	out := []size{{w, h}}
	if sw, sh := (w+1)/2, (h+1)/2; sw >= minSize && sh >= minSize {
		out = append(out, size{sw, sh})
	}
	return out
}

// layout describes the raw pixels in the upload buffer.
type layout struct {
	stride, channels, bps int
	blend                 bool // composite onto the background (the image has alpha)
}

// queueUnpack converts the raw image (composited onto background bg when
// lay.blend) into the full level's linear planes and, when there is one,
// subsamples them into the half level's.
func queueUnpack(q launch.Launcher, k *kernels, sz []size, ws []*work, raw, lut *cuda.Buffer, lay layout, bg float32) error {
	full := ws[0]
	blend := 0
	if lay.blend {
		blend = 1
	}
	g, b := pxGrid(sz[0].w, sz[0].h)
	if err := q.Launch(&k.unpack, g, b, raw, lut, sz[0].w, sz[0].h, lay.stride, lay.channels, lay.bps, blend, bg,
		full.lin[0], full.lin[1], full.lin[2]); err != nil {
		return err
	}
	if len(sz) < 2 {
		return nil
	}
	sub := ws[1]
	g, b = pxGrid(sz[1].w, sz[1].h)
	return q.Launch(&k.subsample, g, b, full.lin[0], full.lin[1], full.lin[2], sz[0].w, sz[0].h,
		sub.lin[0], sub.lin[1], sub.lin[2], sz[1].w, sz[1].h)
}

// queueDecompose decomposes the linear image in wk.lin (consumed) into
// set: opsin dynamics into XYB (in set.uhf[0], set.uhf[1] and wk.res2,
// the working planes), then the LF, MF, HF/UHF splits, then the masking
// activity. wk.lin serve as the row-blur temporaries.
func queueDecompose(q launch.Launcher, k *kernels, s size, intensity float32, wk *work, set planeSet) error {
	w, h := s.w, s.h
	x := [3]*cuda.Buffer{set.uhf[0], set.uhf[1], wk.res2}
	t := wk.lin
	pg, pb := pxGrid(w, h)
	og, ob := opsinGrid(w, h)
	lrg, lrb := lfRowGrid(w, h)
	lcg, lcb := lfColGrid(w, h)
	rg, rb := rowGrid(w, h)
	cg, cb := colGrid(w, h)
	steps := []struct {
		k    *kern
		g, b cuda.Dim3
		args []any
	}{
		{&k.opsin, og, ob, []any{t[0], t[1], t[2], w, h, intensity, x[0], x[1], x[2]}},
		{&k.rowsLF, lrg, lrb, []any{x[0], t[0], w, h}},
		{&k.rowsLF, lrg, lrb, []any{x[1], t[1], w, h}},
		{&k.rowsLF, lrg, lrb, []any{x[2], t[2], w, h}},
		{&k.colsLF, lcg, lcb, []any{t[0], t[1], t[2], x[0], x[1], x[2], set.lf[0], set.lf[1], set.lf[2], w, h}},
		{&k.rowsHF, rg, rb, []any{x[0], t[0], w, h}},
		{&k.rowsHF, rg, rb, []any{x[1], t[1], w, h}},
		{&k.rowsHF, rg, rb, []any{x[2], t[2], w, h}},
		{&k.colsMF, cg, cb, []any{t[0], t[1], t[2], x[0], x[1], set.mf[0], set.mf[1], set.mf[2], w, h}},
		{&k.rowsUHF, rg, rb, []any{x[0], t[0], w, h}},
		{&k.rowsUHF, rg, rb, []any{x[1], t[1], w, h}},
		// x[0], x[1] (set.uhf) become UHF in place; HF goes to set.hf.
		{&k.colsUHF, cg, cb, []any{t[0], t[1], x[0], x[1], set.hf[0], set.hf[1], w, h}},
		{&k.maskPre, pg, pb, []any{set.hf[0], set.hf[1], set.uhf[0], set.uhf[1], t[2], w, h}},
		{&k.rowsMask, rg, rb, []any{t[2], t[0], w, h}},
		{&k.colsMask, cg, cb, []any{t[0], set.act, w, h}},
	}
	for _, st := range steps {
		if err := q.Launch(st.k, st.g, st.b, st.args...); err != nil {
			return err
		}
	}
	return nil
}

// queueErode turns the reference's activity into its mask weights.
func queueErode(q launch.Launcher, k *kernels, s size, set planeSet) error {
	g, b := pxGrid(s.w, s.h)
	return q.Launch(&k.erode, g, b, set.act, set.mac, set.mdc, s.w, s.h)
}

// Combine modes (butteraugli.cu's combine).
const (
	modeAddSub = 1 // blend in the half-resolution map
	modeMax    = 2 // keep the larger of this and the map already there
)

// queueDiff computes the distance map of wk.dist against ref into wk.dm:
// the Malta and AC terms into wk.lin, then combine. sub is the
// half-resolution map (with subW its width) when mode has modeAddSub.
func queueDiff(q launch.Launcher, k *kernels, s size, ref planeSet, wk *work, sub *cuda.Buffer, subW, mode int) error {
	w, h := s.w, s.h
	d := wk.dist
	t := wk.lin
	mg, mb := maltaGrid(w, h)
	if err := q.Launch(&k.maltaX, mg, mb, ref.uhf[0], d.uhf[0], ref.hf[0], d.hf[0], ref.mf[0], d.mf[0],
		ref.mf[2], d.mf[2], t[0], t[1], w, h); err != nil {
		return err
	}
	if err := q.Launch(&k.maltaY, mg, mb, ref.uhf[1], d.uhf[1], ref.hf[1], d.hf[1], ref.mf[1], d.mf[1],
		ref.act, d.act, t[2], w, h); err != nil {
		return err
	}
	// AC terms: X in t[0], Y in t[2], B in t[1].
	g, b := pxGrid(w, h)
	return q.Launch(&k.combine, g, b, t[0], t[2], t[1], ref.lf[0], ref.lf[1], ref.lf[2], d.lf[0], d.lf[1], d.lf[2],
		ref.mdc, ref.mac, sub, wk.dm, w, h, subW, mode)
}

// queueReference decomposes the reference (already unpacked into ws) at
// every level into sets, with its mask weights.
func queueReference(q launch.Launcher, k *kernels, sz []size, intensity float32, ws []*work, sets []planeSet) error {
	for li := len(sz) - 1; li >= 0; li-- {
		if err := queueDecompose(q, k, sz[li], intensity, ws[li], sets[li]); err != nil {
			return err
		}
		if err := queueErode(q, k, sz[li], sets[li]); err != nil {
			return err
		}
	}
	return nil
}

// queueDistorted decomposes the distorted image (already unpacked into ws)
// and compares it with the reference sets at every level, the half level
// first, its map then blended into the full one. second marks the second
// alpha background: the full map keeps the larger value of both.
func queueDistorted(q launch.Launcher, k *kernels, sz []size, intensity float32, ws []*work, sets []planeSet, second bool) error {
	var sub *cuda.Buffer
	subW := 0
	for li := len(sz) - 1; li >= 0; li-- {
		if err := queueDecompose(q, k, sz[li], intensity, ws[li], ws[li].dist); err != nil {
			return err
		}
		mode := 0
		if li == 0 {
			if sub != nil {
				mode |= modeAddSub
			}
			if second {
				mode |= modeMax
			}
		}
		if err := queueDiff(q, k, sz[li], sets[li], ws[li], sub, subW, mode); err != nil {
			return err
		}
		sub, subW = ws[li].dm, sz[li].w
	}
	return nil
}

// queueReduce reduces the full map (n values) into tot: 8 doubles, the
// maximum, the three cube power sums, the three p power sums, 0.
func queueReduce(q launch.Launcher, k *kernels, dm, part, tot *cuda.Buffer, n int, pnorm float64, cube bool) error {
	groups := reduceGroups(n)
	c := 0
	if cube {
		c = 1
	}
	if err := q.Launch(&k.reduceMap, cuda.Dim3{X: uint32(groups), Y: 1, Z: 1}, cuda.Dim3{X: reduceThreads, Y: 1, Z: 1},
		dm, n, reducePer, pnorm, c, part); err != nil {
		return err
	}
	return q.Launch(&k.reducePartials, cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: reduceThreads, Y: 1, Z: 1}, part, groups, tot)
}

// queuePrepare queues the reference half for the raw image in s.raw: per
// background (len(sets): 0 and 1 in linear light when the image has
// alpha) the unpack and the decomposition of every level into sets[v].
func queuePrepare(q launch.Launcher, k *kernels, sz []size, intensity float32, s *slot, lut *cuda.Buffer, lay layout, sets [][]planeSet) error {
	for v := range sets {
		if err := queueUnpack(q, k, sz, s.ws, s.raw, lut, lay, float32(v)); err != nil {
			return err
		}
		if err := queueReference(q, k, sz, intensity, s.ws, sets[v]); err != nil {
			return err
		}
	}
	return nil
}

// queueScore queues the distorted half for the raw image in s.raw and the
// reduction into s.tot.
func queueScore(q launch.Launcher, k *kernels, sz []size, intensity float32, s *slot, lut *cuda.Buffer, lay layout, sets [][]planeSet, pnorm float64) error {
	if err := queueMaps(q, k, sz, intensity, s, lut, lay, sets); err != nil {
		return err
	}
	return queueReduce(q, k, s.ws[0].dm, s.part, s.tot, sz[0].w*sz[0].h, pnorm, isCube(pnorm))
}

// isCube says whether the extra p-norm is the 3-norm (the reduction then
// reuses the cube sums).
func isCube(pnorm float64) bool { return math.Abs(pnorm-3) < 1e-6 }

// queueMaps queues the distorted half for the raw image in s.raw: the
// distance map in s.ws[0].dm. libjxl compares with both backgrounds when
// either image has alpha (an opaque side is the same on both) and keeps
// the larger value per pixel.
func queueMaps(q launch.Launcher, k *kernels, sz []size, intensity float32, s *slot, lut *cuda.Buffer, lay layout, sets [][]planeSet) error {
	variants := len(sets)
	if lay.blend {
		variants = 2
	}
	for v := 0; v < variants; v++ {
		if err := queueUnpack(q, k, sz, s.ws, s.raw, lut, lay, float32(v)); err != nil {
			return err
		}
		if err := queueDistorted(q, k, sz, intensity, s.ws, sets[min(v, len(sets)-1)], v > 0); err != nil {
			return err
		}
	}
	return nil
}
