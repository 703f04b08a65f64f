package butteraugli

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/upband"
)

// Pipelined scoring of a cached whole-image Butteraugli reference: the
// host path of SSIMULACRA2 (gpu/webgpu/ssim2/pipe.go, band.go), through
// the shared upband package.
//
// On an H200 a cached 16 MP score took 9.84 ms for 7.33 ms of GPU work:
// the device thread mapped the staging buffer, filled it (48 MiB: the
// PCIe transfer, ~1.6 ms), recorded ~40 dispatches and submitted, all in
// one call, and then blocked in the read-back holding the reference's
// lock. Here a score takes a staging slot that sits mapped between scores
// and fills it on its own goroutines while the device thread records the
// score (the copy out of the slot included); the submit is then an unmap,
// the unpack block's queue write and Queue.Submit, followed in the same
// call by the first slice of the wait; later slices let other callers'
// device work in, and the slot is mapped again after the score returns.
// Large opaque images (bfBandPlan) upload in row bands: once band b is
// filled its copy, unpack (per pixel) and 2×2 subsample (its rows pair
// within the band: band starts are multiples of 256 rows) are submitted
// from another goroutine while band b+1 fills, and with them the head of
// both levels' decomposition (opsin and the LF row blur: row-local) in
// row windows over the rows that band completes (window.go;
// ZENMETRICS_BA_BANDWORK=0 leaves the head to the final command buffer).
// The final command buffer runs the last band, its windows and everything
// from the LF column blur on. Every value comes from the same kernels on
// the same inputs as the plain path: scores and maps are the same bits.
//
// Measured for one caller on the H200 (bfPipeOn has the numbers): the
// record, the staging map's round trip and the separate read call left
// the critical path, which is worth ~0.2 ms at 1 MP and ~0.5 ms at 4 MP.
// At 16 MP the fill (~1.7 ms of PCIe) still came before the whole
// decomposition; the head's windows (not yet timed on the H200) move
// ~0.4 ms of opsin and the LF row blur's share of the GPU work behind
// the fills. The column blurs (34 rows of reach at full resolution)
// wait for the whole image; with two callers the fill of one overlaps
// the other's GPU work.

// Host-path switches, read once (A/B measurements in one binary; the
// tests set the variables).
var (
	// bfPipeOn pipelines scores; ZENMETRICS_BA_PIPE=0 scores every image
	// the plain way (one device-thread call that uploads, records,
	// submits and waits), for A/B runs. On the H200 (2026-11-28, two
	// alternated rounds, median / min ms) pipelining took 1 MP from
	// 1.38–1.56 to 1.18–1.32 and 4 MP from 3.12–3.27 to 2.67–2.71; 16 MP
	// medians moved within their noise (9.51–10.86 against 9.98–10.90)
	// and its minimums fell from 9.73–9.92 to 9.23–9.47.
	bfPipeOn = os.Getenv("ZENMETRICS_BA_PIPE") != "0"
	// bfBandsEnv is ZENMETRICS_BA_BANDS: "0" or "off" (no bands), "on"
	// (bands wherever two fit), 2..4, or "" (one band per 12 MiB).
	bfBandsEnv = os.Getenv("ZENMETRICS_BA_BANDS")
	// bfBandSlots is the staging slots per band (ZENMETRICS_BA_BANDSLOTS,
	// 2–4).
	bfBandSlots = min(4, max(2, upband.EnvInt("ZENMETRICS_BA_BANDSLOTS", 2)))
	// bfFillChunk is the bytes one goroutine copies into a slot.
	bfFillChunk = upband.EnvInt("ZENMETRICS_BA_FILL_CHUNK", 512<<10)
	// bfPipeMin is the raw size from which scores are pipelined (tests
	// lower it to reach small images).
	bfPipeMin = int64(webgpu.StagingMin)
)

// bfBandPlan is Butteraugli's band plan: SSIMULACRA2's (one band per 12
// MiB of raw bytes, at most 4, starts on multiples of 256 rows). Tests
// change Bytes to move the threshold.
var bfBandPlan = upband.Plan{Bytes: 12 << 20, Max: bfMaxBands, Align: 256}

const bfMaxBands = 4

// bfWaitSlice is the longest one device-thread call waits for the GPU.
const bfWaitSlice = 250 * time.Microsecond

// bfPipe is a reference's pipelined host path.
type bfPipe struct {
	whole bool               // a whole-image reference: pipelined scores allowed
	ring  webgpu.StagingRing // whole-image slots
	rings [bfMaxBands]webgpu.StagingRing
	// seq is held by a banded score from its first band's submit to its
	// final one, and by every other score around its submit, so that no
	// score's commands land between a banded score's (they share the
	// scratch planes). Taken before mu.
	seq   sync.Mutex
	bands map[int]*bfBandSet // by band count (device thread, made once)
}

// bfBandSet is the uniforms of one band count's bands.
type bfBandSet struct {
	rows   []int
	unpack []*webgpu.Buffer // per band: the unpack block (rewritten per layout)
	sub    []*webgpu.Buffer // per band: the subsample block
	head   [][]bfHead       // per band and level: the head windows (nil: no band work)
	key    bfParams         // the layout the unpack blocks hold
	keySet bool
}

// enable turns the pipelined path on for a whole-image reference (before
// it is handed out): two whole-image slots (one scoring on the GPU, one
// being filled, as SSIMULACRA2's) and bfBandSlots per band.
func (p *bfPipe) enable() {
	p.whole = true
	p.ring.N = 2
	for i := range p.rings {
		p.rings[i].N = bfBandSlots
	}
}

// close stops the rings and returns their buffers (waiting for slots in
// use to come back).
func (p *bfPipe) close(dev *webgpu.Device) []*webgpu.Buffer {
	bufs := p.ring.Close(dev)
	for i := range p.rings {
		bufs = append(bufs, p.rings[i].Close(dev)...)
	}
	return bufs
}

// pipelined says whether a score of rows [lo, hi) of dist takes the
// pipelined path: whole images of a whole-image reference, not timed
// (benchmarks and profiles time the plain path's one command buffer), of
// at least bfPipeMin raw bytes.
func (r *butteraugliRef) pipelined(dist *zenmetrics.Image, lo, hi int) bool {
	if !bfPipeOn || !r.pipe.whole || lo != 0 || hi != r.h || len(r.levels) == 0 || bfRawBytes(dist) < bfPipeMin {
		return false
	}
	if webgpu.SizeMismatch(r.w, r.h, dist) != nil || butteraugliFits(r.dev, r.w, r.h, bfRawBytes(dist)) != nil {
		return false // the plain path reports it
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.timed && !r.released
}

// bandCount is how many bands a score of dist uploads in (1: none): only
// opaque images of a one-background reference (with two backgrounds the
// second unpack would overwrite the first's planes).
func (r *butteraugliRef) bandCount(dist *zenmetrics.Image) int {
	if r.variants(dist) != 1 {
		return 1
	}
	return bfBandPlan.Count(r.h, bfRawBytes(dist), bfBandsEnv)
}

// bfCmd is one score's recorded and finished command buffer.
type bfCmd struct {
	e       *webgpu.Encoder
	rb, rdm *webgpu.Readback // the sums; the map (distMap only)
	raw     *webgpu.Buffer   // r.up.Raw when recorded
}

// bfRecorded is recordAsync's answer.
type bfRecorded = upband.Recorded[*bfCmd]

// errStale is the answer for commands recorded against an upload buffer
// that another score has since replaced.
var errStale = errors.New("webgpu: butteraugli: recorded score is stale")

// record records a pipelined score of dist (device thread; no lock: it
// reads the reference's fixed buffers and the upload, which only the
// device thread changes): the copy out of the filled slots (bands from
// band first on, with their unpack; unbanded the whole image), the rest
// of the score and the read-backs. The slots may still be mapped and
// being filled. On error nothing is left to discard.
func (r *butteraugliRef) record(g *webgpu.GPU, dist *zenmetrics.Image, slots []*webgpu.StagingSlot, n, first int) (*bfCmd, error) {
	if _, err := r.lut(g, dist.Format.BytesPerSample()); err != nil {
		return nil, err
	}
	e := g.Encoder()
	fail := func(err error) (*bfCmd, error) {
		e.Discard()
		return nil, err
	}
	need := bfRawBytes(dist)
	if n == 1 {
		if err := r.up.CopyFilled(g, e, &r.own, slots[0], 0, (need+3)&^3, need); err != nil {
			return fail(err)
		}
		r.encodeScore(nil, e, dist)
	} else {
		bs, err := r.bandSet(g, n)
		if err != nil {
			return fail(err)
		}
		for b := first; b < n; b++ {
			if err := r.encodeBand(g, e, bs, dist, b, slots[b]); err != nil {
				return fail(err)
			}
		}
		r.encodeLevels(e, 0, bs.head == nil)
		r.encodeReduce(e)
	}
	c := &bfCmd{e: e, raw: r.up.Raw}
	var err error
	if c.rb, err = e.ReadBack(r.result, 0, 32); err != nil {
		return fail(err)
	}
	if r.distMap {
		if c.rdm, err = e.ReadBack(r.levels[0].dm, 0, 4*int64(r.w)*int64(r.h)); err != nil {
			return fail(err)
		}
	}
	if err := e.Finish(); err != nil {
		return fail(err)
	}
	return c, nil
}

// recordAsync records on the device thread while the caller fills; the
// answer comes on the channel.
func (r *butteraugliRef) recordAsync(ctx context.Context, dist *zenmetrics.Image, slots []*webgpu.StagingSlot, n int) <-chan bfRecorded {
	return upband.RecordAsync(ctx, r.dev, func(g *webgpu.GPU) (*bfCmd, error) {
		return r.record(g, dist, slots, n, n-1)
	}, discardCmd)
}

// discardCmd drops a recorded score that will not be submitted (device
// thread).
func discardCmd(c *bfCmd) { c.e.Discard() }

// scorePipelined is scoreWindow's pipelined path for whole images
// (r.mu not held).
func (r *butteraugliRef) scorePipelined(ctx context.Context, dist *zenmetrics.Image) (bfSums, error) {
	ph := upband.Phases{T0: time.Now()}
	defer func() {
		if bfTrace {
			ph.Print("butteraugli", r.w, r.h)
		}
	}()
	if err := ctx.Err(); err != nil {
		return bfSums{}, err
	}
	need := bfRawBytes(dist)
	n := r.bandCount(dist)
	ph.Bands = n
	var slots []*webgpu.StagingSlot
	defer func() {
		switch {
		case n == 1 && len(slots) == 1:
			upband.PutSlot(r.dev, &r.pipe.ring, slots[0], true)
		default:
			for b, st := range slots {
				upband.PutSlot(r.dev, &r.pipe.rings[b], st, true)
			}
		}
	}()
	locked := false
	defer func() {
		if locked {
			r.pipe.seq.Unlock()
		}
	}()
	var rec <-chan bfRecorded
	raws := make([]*webgpu.Buffer, n)
	var err error
	if n == 1 {
		size := (need + 3) &^ 3
		t := time.Now()
		st, err := r.pipe.ring.Take(ctx, r.dev, size)
		ph.Take = time.Since(t)
		if err != nil {
			return bfSums{}, err
		}
		slots = []*webgpu.StagingSlot{st}
		rec = r.recordAsync(ctx, dist, []*webgpu.StagingSlot{st}, 1)
		ph.Fill = upband.Fill(st.Mem, dist.Pix, need, size, bfFillChunk)
	} else {
		took := make([]time.Duration, n)
		up := upband.Bands{Dev: r.dev, Rings: r.pipe.rings[:], Chunk: bfFillChunk,
			Early: func(b int, st *webgpu.StagingSlot) error {
				return r.submitBand(ctx, dist, n, b, st, &raws[b], &took[b])
			},
			Before: func() {
				r.pipe.seq.Lock()
				locked = true
			},
			Last: func(all []*webgpu.StagingSlot) { rec = r.recordAsync(ctx, dist, all, n) },
		}
		slots, err = up.Upload(ctx, dist.Pix, upband.Cuts(bfBandPlan.Rows(r.h, n), dist.Stride, need), &ph)
		for _, d := range took {
			ph.Early += d
		}
	}
	var c *bfCmd
	if rec != nil {
		t := time.Now()
		res := <-rec
		c = res.C
		ph.Record, ph.RecWait = res.Took, ph.RecWait+time.Since(t)
		if err == nil {
			err = res.Err
		} else if c != nil {
			upband.DiscardLater(r.dev, &c, discardCmd)
		}
	}
	if err != nil {
		return bfSums{}, err
	}
	if bfBandHook != nil {
		bfBandHook(r)
	}
	t1 := time.Now()
	if !locked {
		r.pipe.seq.Lock()
		locked = true
	}
	var sums [8]float32
	var dm []float32
	if r.distMap {
		dm = make([]float32, r.w*r.h)
	}
	read := func() error {
		if err := webgpu.ReadSlice(c.rb, sums[:]); err != nil {
			return err
		}
		if c.rdm != nil {
			return webgpu.ReadSlice(c.rdm, dm)
		}
		return nil
	}
	done, err := r.submitPiped(ctx, dist, &c, slots, raws, n, ph.Fill, read, &ph)
	r.pipe.seq.Unlock()
	locked = false
	ph.Submit = time.Since(t1)
	if err != nil {
		return bfSums{}, err
	}
	t2 := time.Now()
	if !done {
		err = upband.AwaitSlices(ctx, r.dev, c.rb, bfWaitSlice, func(*webgpu.GPU) error { return read() },
			func(*webgpu.GPU) error { c.drain(); return nil })
	}
	ph.Wait = time.Since(t2)
	if err != nil {
		return bfSums{}, err
	}
	ws := bfSums{max: float64(sums[0]), n: float64(r.w * r.h), dm: dm}
	for i := range ws.s {
		ws.s[i] = float64(sums[1+i])
	}
	return ws, nil
}
