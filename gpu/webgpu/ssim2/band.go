package ssim2

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/upband"
)

// Banded upload of large distorted images.
//
// On the H200 the staging buffer is device-local, host-visible memory, so
// filling it is the PCIe transfer: ~1.6 ms for a 16 MP RGB8 image
// (48 MiB), during which the GPU idled, and the GPU's ~3 ms of kernels
// only started once it was done (a cached 16 MP score took 4.98 ms). Much
// of that GPU work only needs the rows it works on: unpacking raw bytes
// into linear RGB and XYB is per pixel, and scale 0's horizontal blurs are
// per row (~0.18 + ~1.2 ms of the 3 ms). So a banded score splits the
// image into ssim2BandCount row bands, each with its own staging slot
// (one ring per band index: a mapped buffer cannot be submitted, so band
// b+1 cannot be written into the buffer band b is copied from), and
// after filling band b submits, from another goroutine while band b+1 is
// filled, the copy of band b into the upload buffer and the work that
// needs only its rows. The last band goes into the final command buffer
// (recorded while it is filled) with the rest. Every value is computed
// by the same kernel code on the same inputs as unbanded (rows are
// independent in those kernels), so scores are the same bits.
//
// The band work, by default (bandwork.go): the fused pyramid of the
// band's 32-row tiles and the horizontal blurs of its rows at every
// scale; vstate, vmaps and the reduction follow the last band.
//
// The legacy band work (ZENMETRICS_SSIM2_BANDWORK=0, and wherever the
// fused pyramid is off): the band's unpack (the kernel bound to the
// band's window of the raw and linear buffers, its XYB planes offset
// through Params.base) and scale 0's horizontal blurs of its rows (job
// tables whose jobs start at the band's first row); the final does
// downsampling, the other scales' horizontal blurs, vstate, vmaps and
// the reduction. Measured on the H200 at 16 MP (SSIM2_PERF.md): fill
// 1.8 ms, then ~2.4 ms of GPU work after it, 4.0–4.3 ms a score.
//
// Measured on the H200 (session 10, three alternated rounds, cached
// median ms): with the band work a 16 MP score took 3.62–3.70 against
// 4.08–4.17 for the legacy bands, and a 4 MP score in two bands 1.27–1.29
// against 1.39–1.40 unbanded; four bands at 4 MP (1.80–1.97) and two or
// four at 1 MP (0.67–0.70, 1.03–1.11, against 0.69–0.70) lost to the
// extra submits. So the default aims at one band per 6 MiB of raw bytes
// (4 MP of RGB8 in two, 16 MP in four, 1 MP unbanded);
// ZENMETRICS_SSIM2_BANDS and ZENMETRICS_SSIM2_BANDKIB set others for
// measurements.

// ssim2DefaultBands is the most bands the default splits a score into;
// ssim2MaxBands the most the environment may ask for.
const (
	ssim2DefaultBands = 4
	ssim2MaxBands     = 8
)

// ssim2BandBytes is the raw bytes per band the default aims at: one band
// per 6 MiB (2 MP of RGB8), at most ssim2DefaultBands, none below two.
// ZENMETRICS_SSIM2_BANDKIB (KiB) sets another for measurements: 1024
// bands a 1 MP RGB8 score in 3 and a 4 MP one in 4.
var ssim2BandBytes = int64(upband.EnvInt("ZENMETRICS_SSIM2_BANDKIB", 6<<10)) << 10

// ssim2BandAlign is the rows the legacy band starts are a multiple of: a
// band's windows of the raw upload (rows × stride bytes) and of the linear
// planes (rows × width × 4 bytes) must start on WebGPU's storage-binding
// offset alignment, at most 256 bytes on any device. The band work of
// bandwork.go binds whole buffers and cuts at ssim2PyrTile rows.
const ssim2BandAlign = 256

// ssim2BandsEnv is ZENMETRICS_SSIM2_BANDS: "off" (never band), "on" (band
// every pipelined score that has room for two bands or more, as many as
// the default would, at least two: for A/B measurements and the tests),
// a number 1..ssim2MaxBands (that many where there is room, at every size:
// 1 is "off"), or "" (the default).
var ssim2BandsEnv = os.Getenv("ZENMETRICS_SSIM2_BANDS")

// ssim2BandPlan is the band plan of SSIMULACRA2's uploads: cuts at
// multiples of ssim2PyrTile rows with the band work (work), of
// ssim2BandAlign without; at most ssim2DefaultBands unless the
// environment asks for more.
func ssim2BandPlan(work bool) upband.Plan {
	p := upband.Plan{Bytes: ssim2BandBytes, Max: ssim2DefaultBands, Align: ssim2BandAlign}
	if work {
		p.Align = ssim2PyrTile
	}
	if _, err := strconv.Atoi(ssim2BandsEnv); err == nil {
		p.Max = ssim2MaxBands
	}
	return p
}

// ssim2BandCount is how many bands a score of an image h rows high with
// need raw bytes uploads in (1: unbanded), with or without the band work.
func ssim2BandCount(h int, need int64, work bool) int {
	return ssim2BandPlan(work).Count(h, need, ssim2BandsEnv)
}

// ssim2BandRows is the band boundaries of n bands over h rows: n+1 rows
// from 0 to h, the inner ones multiples of the plan's alignment near i·h/n
// (each band at least that many rows when h ≥ n times it).
func ssim2BandRows(h, n int, work bool) []int { return ssim2BandPlan(work).Rows(h, n) }

// ssim2BandKey names a band layout: the band count, and whether it is
// the band work's (bandwork.go) or the legacy one.
type ssim2BandKey struct {
	n    int
	work bool
}

// ssim2BandSet is what the bands of one band count need on the device.
type ssim2BandSet struct {
	work   bool             // the band work's layout (bandwork.go)
	rows   []int            // band boundaries (ssim2BandRows)
	unpack []*webgpu.Buffer // per band: its unpack (legacy) or pyramid (work) Params (uniform)
	key    ssim2Layout      // the layout the unpack blocks were written for
	// Per band, per channel group: the horizontal-blur jobs of its rows
	// (hblur4 and the row kernel; one of the two may be empty): of scale
	// 0 (legacy) or of every scale (work).
	h4, h1 [][]ssim2Jobs
	// Legacy, per channel group: the other scales' horizontal-blur jobs.
	rest4, rest1 []ssim2Jobs
}

// banded says whether a pipelined score of dist goes in bands: one pass
// (no alpha: the passes share the scratch, so a second pass's unpack
// must wait for the first pass's blurs), no kept blurs (their hblur
// tables differ) and room for two bands or more.
func (r *ssim2Ref) banded(dist *zenmetrics.Image) bool {
	return len(r.passes) == 1 && !r.keep && len(r.plan) > 0 && r.bandCount(dist) > 1
}

// bandCount is how many bands a pipelined score of dist uploads in, in
// the plan of r.bandWork.
func (r *ssim2Ref) bandCount(dist *zenmetrics.Image) int {
	return ssim2BandCount(dist.Height, ssim2RawBytes(dist), r.bandWork())
}

// bandSet returns the band layout key names, making it the first time
// (device thread, r.mu held).
func (r *ssim2Ref) bandSet(g *webgpu.GPU, key ssim2BandKey) (*ssim2BandSet, error) {
	if bs := r.bandSets[key]; bs != nil {
		return bs, nil
	}
	k, err := kernels(g)
	if err != nil {
		return nil, err
	}
	var made webgpu.Buffers
	bs := &ssim2BandSet{work: key.work, rows: ssim2BandRows(r.h, key.n, key.work)}
	if key.work {
		r.makeBandWork(g, k, &made, bs)
	} else {
		r.makeBandLegacy(g, k, &made, bs)
	}
	if made.Err != nil {
		for _, b := range made.Take() {
			b.Release()
		}
		return nil, made.Err
	}
	for _, b := range made.List {
		r.own.Add(b)
	}
	if r.bandSets == nil {
		r.bandSets = map[ssim2BandKey]*ssim2BandSet{}
	}
	r.bandSets[key] = bs
	return bs, nil
}

// makeBandLegacy takes and writes the legacy band layout's buffers into
// t: per band an unpack block (written per image layout) and scale 0's
// horizontal-blur jobs of its rows, and the other scales' jobs.
func (r *ssim2Ref) makeBandLegacy(g *webgpu.GPU, k *ssim2Kernels, t *webgpu.Buffers, bs *ssim2BandSet) {
	w := r.plan[0].W
	maps := func(y0, y1 int) func(s, c int) *ssim2Params {
		return func(s, c int) *ssim2Params {
			p := r.lay.vmapsParams(r.plan, 0, s, c, r.win[s])
			p.Height, p.Base = uint32(y1-y0), uint32(y0*w)
			return p
		}
	}
	wide, narrow := r.wide(k), r.narrow(k)
	s0 := func(f func(int) bool) func(int) bool { return func(s int) bool { return s == 0 && f(s) } }
	rest := func(f func(int) bool) func(int) bool { return func(s int) bool { return s > 0 && f(s) } }
	for b := 0; b+1 < len(bs.rows); b++ {
		y0, y1 := bs.rows[b], bs.rows[b+1]
		bs.unpack = append(bs.unpack, t.Uniform(g, ssim2ParamBytes))
		h4 := ssim2JobTables(g, t, &r.pyr, r.plan, nil, s0(wide), maps(y0, y1))
		h1 := ssim2JobTables(g, t, &r.pyr, r.plan, nil, s0(narrow), maps(y0, y1))
		for i := range h4 {
			h4[i].maxH, h1[i].maxH = min(h4[i].maxH, y1-y0), min(h1[i].maxH, y1-y0)
		}
		bs.h4, bs.h1 = append(bs.h4, h4), append(bs.h1, h1)
	}
	full := func(s, c int) *ssim2Params { return r.lay.vmapsParams(r.plan, 0, s, c, r.win[s]) }
	bs.rest4 = ssim2JobTables(g, t, &r.pyr, r.plan, nil, rest(wide), full)
	bs.rest1 = ssim2JobTables(g, t, &r.pyr, r.plan, nil, rest(narrow), full)
}

// bandBytes is band b's raw bytes of dist: [lo, hi) of its pixel memory
// (the last band ends at the image's last byte).
func (bs *ssim2BandSet) bandBytes(dist *zenmetrics.Image, b int) (lo, hi int64) {
	lo = int64(bs.rows[b]) * int64(dist.Stride)
	if b == len(bs.rows)-2 {
		return lo, ssim2RawBytes(dist)
	}
	return lo, int64(bs.rows[b+1]) * int64(dist.Stride)
}

// encodeBand records band b of a banded score (device thread): the copy of
// its slot into the upload buffer, then the band's work: with bs.work its
// tiles of the pyramid and every scale's horizontal blurs of its rows
// (encodeBandWork), else its unpack and scale 0's horizontal blurs of its
// rows. The slot may still be mapped (record ahead).
func (r *ssim2Ref) encodeBand(g *webgpu.GPU, e *webgpu.Encoder, k *ssim2Kernels, bs *ssim2BandSet, dist *zenmetrics.Image, b int, st *webgpu.StagingSlot) error {
	lo, hi := bs.bandBytes(dist, b)
	n := (hi - lo + 3) &^ 3
	if err := r.up.CopyFilled(g, e, &r.held, st, lo, n, ssim2RawBytes(dist)); err != nil {
		return err
	}
	if bs.work {
		r.encodeBandWork(e, k, bs, b)
		return nil
	}
	p := r.passes[0]
	y0, y1 := bs.rows[b], bs.rows[b+1]
	w := r.plan[0].W
	unpack := k.unpack
	if r.pyr.nb == 1 {
		unpack = k.unpack1
	}
	plane := webgpu.Range{Off: int64(y0) * int64(w) * 4, Size: int64(y1-y0) * int64(w) * 4}
	bufs := []*webgpu.Buffer{bs.unpack[b], r.up.Raw, r.lin[0][0], r.lin[0][1], r.lin[0][2]}
	rng := []webgpu.Range{{}, {Off: lo, Size: n}, plane, plane, plane}
	e.DispatchRanges(unpack, webgpu.Groups(w, ssim2WG), webgpu.Groups(y1-y0, ssim2WG), 1, append(bufs, r.pyr.xybOut(r.xyb)...), rng)
	for gi := range r.pyr.groups() {
		q := *p
		q.h4, q.h1 = bs.h4[b], bs.h1[b]
		r.encodeHBlur(e, k, &q, gi)
	}
	return nil
}

// encodeBandedRest records what follows the bands: with bs.work vstate
// and vmaps; legacy, before them downsampling from the full scale 0 and
// the other scales' horizontal blurs.
func (r *ssim2Ref) encodeBandedRest(e *webgpu.Encoder, k *ssim2Kernels, bs *ssim2BandSet) {
	p := r.passes[0]
	if bs.work {
		for gi := range r.pyr.groups() {
			r.encodeVState(e, k, p, gi)
			r.encodeVMaps(e, k, p, gi)
		}
		return
	}
	xo := r.pyr.xybOut(r.xyb)
	down := k.downsample
	if r.pyr.nb == 1 {
		down = k.downsample1
	}
	for s := 1; s < len(r.plan); s++ {
		sc, in := r.plan[s], r.lin[s-1]
		bufs := []*webgpu.Buffer{r.dsParams[s], in[0], in[1], in[2], r.lin[s][0], r.lin[s][1], r.lin[s][2]}
		e.Dispatch(down, webgpu.Groups(sc.W, ssim2WG), webgpu.Groups(sc.H, ssim2WG), 1, append(bufs, xo...)...)
	}
	for gi := range r.pyr.groups() {
		q := *p
		q.h4, q.h1 = bs.rest4, bs.rest1
		r.encodeHBlur(e, k, &q, gi)
		r.encodeVState(e, k, p, gi)
		r.encodeVMaps(e, k, p, gi)
	}
}

// writeBandParams writes the bands' unpack blocks for dist's layout when
// they hold another (a queue write: ordered after every score submitted
// before and before this submit).
func (r *ssim2Ref) writeBandParams(g *webgpu.GPU, bs *ssim2BandSet, lay ssim2Layout) {
	if bs.key == lay {
		return
	}
	p := r.passes[0]
	for b := range bs.unpack {
		up := r.unpackParams(lay, p.bg)
		y0, y1 := bs.rows[b], bs.rows[b+1]
		if bs.work {
			// The pyramid's block: the whole image's, from the band's
			// first row of tiles.
			up.TileY = uint32(y0 / ssim2PyrTile)
			g.Write(bs.unpack[b], 0, up.bytes())
			continue
		}
		up.Height = uint32(y1 - y0)
		up.Base += uint32(y0 * r.w)
		up.Base1 += uint32(y0 * r.w)
		up.Base2 += uint32(y0 * r.w)
		g.Write(bs.unpack[b], 0, up.bytes())
	}
	bs.key = lay
}

// submitBand records and submits band b (not the last) under r.mu: its
// slot is filled.
// It sets *raw to the upload buffer it copied into and *took to the
// time Queue.Submit took.
func (r *ssim2Ref) submitBand(ctx context.Context, dist *zenmetrics.Image, key ssim2BandKey, b int, st *webgpu.StagingSlot,
	raw **webgpu.Buffer, took *time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return zenmetrics.ErrReleased
	}
	return r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		k, err := kernels(g)
		if err != nil {
			return err
		}
		bs, err := r.bandSet(g, key)
		if err != nil {
			return err
		}
		e := g.Encoder()
		if err := r.encodeBand(g, e, k, bs, dist, b, st); err != nil {
			e.Discard()
			return err
		}
		r.writeBandParams(g, bs, distLayout(dist))
		st.Unmap(g, 0, 0) // the final books the whole image
		*raw = r.up.Raw
		t := time.Now()
		err = e.Submit()
		*took = time.Since(t)
		return err
	})
}

// recordBandedFinal records the last band and the rest of a banded score
// (device thread; the band layout exists: band 0 made it). With stale
// (the upload buffer was replaced since the bands were submitted, by
// another caller's larger image) every band's slot is copied again and
// its work done again: the earlier bands' work read the old buffer.
func (r *ssim2Ref) recordBandedFinal(g *webgpu.GPU, dist *zenmetrics.Image, key ssim2BandKey, slots []*webgpu.StagingSlot, stale bool) (*scoreCmd, error) {
	k, err := kernels(g)
	if err != nil {
		return nil, err
	}
	bs, err := r.bandSet(g, key)
	if err != nil {
		return nil, err
	}
	n := key.n
	e := g.Encoder()
	first := n - 1
	if stale {
		first = 0
	}
	for b := first; b < n; b++ {
		if err := r.encodeBand(g, e, k, bs, dist, b, slots[b]); err != nil {
			e.Discard()
			return nil, err
		}
	}
	r.encodeBandedRest(e, k, bs)
	r.encodeReduce(e, k)
	c := &scoreCmd{e: e, raw: r.up.Raw, need: ssim2RawBytes(dist), lay: distLayout(dist)}
	if c.rb, err = e.ReadBack(r.sums, 0, int64(r.nTerms)*8); err != nil {
		e.Discard()
		return nil, err
	}
	if err := e.Finish(); err != nil {
		e.Discard()
		return nil, err
	}
	return c, nil
}

// ssim2StaleBands counts banded scores whose bands were copied into an
// upload buffer that another score then replaced (tests log it).
var ssim2StaleBands atomic.Int64

// ssim2BandHook, when set (tests), runs after a banded score's early
// bands and before its final submit.
var ssim2BandHook func(r *ssim2Ref)

// distLayout is dist's ssim2Layout.
func distLayout(dist *zenmetrics.Image) ssim2Layout {
	return ssim2Layout{format: dist.Format, stride: dist.Stride, blend: dist.Format.HasAlpha()}
}

// scoreBanded is scorePipelined for banded images (r.banded; r.mu not
// held). Band b is taken from ring b, filled, and submitted from another
// goroutine while band b+1 is filled; the final command buffer (the last
// band and the rest) is recorded while the last band is filled and
// submitted once it is. r.seq is held from the first band's submit to
// the final one.
func (r *ssim2Ref) scoreBanded(ctx context.Context, dist *zenmetrics.Image) (float64, error) {
	ph := ssim2Phases{Phases: upband.Phases{T0: time.Now()}}
	defer ph.print(dist.Width, dist.Height)
	need := ssim2RawBytes(dist)
	work := r.bandWork()
	n := ssim2BandCount(dist.Height, need, work)
	key := ssim2BandKey{n: n, work: work}
	ph.Bands, ph.legacy = n, !work
	ssim2InFlight.Add(1) // a banded score keeps its slices (no tail spin) but counts
	defer ssim2InFlight.Add(-1)
	var slots []*webgpu.StagingSlot
	defer func() {
		for b, st := range slots {
			r.putSlot(&r.bandRings[b], st)
		}
	}()
	locked := false
	defer func() {
		if locked {
			r.seq.Unlock()
		}
	}()
	raws := make([]*webgpu.Buffer, n)
	took := make([]time.Duration, n)
	var rec <-chan recorded
	up := upband.Bands{Dev: r.dev, Rings: r.bandRings[:], Chunk: ssim2FillChunk,
		Early: func(b int, st *webgpu.StagingSlot) error {
			return r.submitBand(ctx, dist, key, b, st, &raws[b], &took[b])
		},
		Before: func() {
			r.seq.Lock()
			locked = true
		},
		Last: func(all []*webgpu.StagingSlot) {
			if ssim2Overlap {
				rec = r.recordFinalAsync(ctx, dist, key, all)
			}
		},
	}
	slots, err := up.Upload(ctx, dist.Pix, upband.Cuts(ssim2BandRows(r.h, n, work), dist.Stride, need), &ph.Phases)
	if err != nil {
		if rec != nil {
			r.dropRecorded(rec)
		}
		return 0, err
	}
	for _, d := range took {
		ph.Early += d
	}
	var c *scoreCmd
	if rec != nil {
		t := time.Now()
		res := <-rec
		c = res.C
		ph.Record, ph.RecWait = res.Took, ph.RecWait+time.Since(t)
		if res.Err != nil {
			return 0, res.Err
		}
	}
	if ssim2BandHook != nil {
		ssim2BandHook(r)
	}
	t1 := time.Now()
	host := make([]float32, len(r.sumsHost))
	rb, read, err := r.submitBandedFinal(ctx, dist, key, slots, raws, c, ph.Fill, host, &ph)
	r.seq.Unlock()
	locked = false
	ph.Submit = time.Since(t1)
	if err != nil {
		return 0, err
	}
	t2 := time.Now()
	if !read {
		err = r.awaitSums(ctx, rb, host)
	}
	ph.Wait = time.Since(t2)
	if err != nil {
		return 0, err
	}
	return r.finishFrom(host), nil
}

// recordFinalAsync records a banded score's final command buffer on the
// device thread while the caller fills the last band (recordAsync's
// counterpart).
func (r *ssim2Ref) recordFinalAsync(ctx context.Context, dist *zenmetrics.Image, key ssim2BandKey, slots []*webgpu.StagingSlot) <-chan recorded {
	return upband.RecordAsync(ctx, r.dev, func(g *webgpu.GPU) (*scoreCmd, error) {
		return r.recordBandedFinal(g, dist, key, slots, false)
	}, discardCmd)
}

// dropRecorded waits for a record in flight and drops it.
func (r *ssim2Ref) dropRecorded(rec <-chan recorded) {
	if res := <-rec; res.C != nil {
		upband.DiscardLater(r.dev, &res.C, discardCmd)
	}
}

// discardCmd drops a recorded score that will not be submitted (device
// thread).
func discardCmd(c *scoreCmd) { c.e.Discard() }

// submitBandedFinal submits a banded score's final command buffer c (nil:
// record it now) under r.mu and returns its read-back and whether its
// sums are already in host (firstSlice). When the upload
// buffer is no longer the one every band was copied into (raws), the
// final is recorded again with every band (recordBandedFinal's stale).
func (r *ssim2Ref) submitBandedFinal(ctx context.Context, dist *zenmetrics.Image, key ssim2BandKey, slots []*webgpu.StagingSlot,
	raws []*webgpu.Buffer, c *scoreCmd, fill time.Duration, host []float32, ph *ssim2Phases) (*webgpu.Readback, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		if c != nil {
			upband.DiscardLater(r.dev, &c, discardCmd)
		}
		return nil, false, zenmetrics.ErrReleased
	}
	var rb *webgpu.Readback // device thread only, until Do has returned nil
	used, read := false, false
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		used = true
		t := time.Now()
		stale := false
		for _, raw := range raws[:key.n-1] {
			stale = stale || raw != r.up.Raw
		}
		if stale {
			ssim2StaleBands.Add(1)
		}
		if c != nil && (stale || c.raw != r.up.Raw) {
			c.e.Discard()
			c = nil
		}
		if c == nil {
			var err error
			if c, err = r.recordBandedFinal(g, dist, key, slots, stale); err != nil {
				return err
			}
		}
		rb = c.rb
		r.writeBandParams(g, r.bandSets[key], distLayout(dist))
		slots[key.n-1].Unmap(g, c.need, fill)
		if err := c.e.Submit(); err != nil {
			return err
		}
		var err error
		read, err = ph.firstSlice(t, rb, host)
		return err
	})
	if err != nil {
		r.abandon(&rb, &used, &c)
		return nil, false, err
	}
	return rb, read, nil
}
