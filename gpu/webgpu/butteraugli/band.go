package butteraugli

import (
	"context"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/upband"
)

// Bands and submits of pipelined scores (pipe.go).

// bfBandHook, when set (tests), runs after a pipelined score's record and
// early bands and before its final submit.
var bfBandHook func(r *butteraugliRef)

// bandSet returns the uniforms of n bands, making them the first time
// (device thread). A band's unpack block is the whole image's with its
// height; its subsample block maps the band's half-resolution rows
// [y0/2, ⌈y1/2⌉) to its full rows [y0, y1), so the odd last row is only
// the last band's, as in the whole image. With bfBandWork it also makes
// the parameter blocks of the bands' head windows (window.go).
func (r *butteraugliRef) bandSet(g *webgpu.GPU, n int) (*bfBandSet, error) {
	if bs := r.pipe.bands[n]; bs != nil {
		return bs, nil
	}
	var made webgpu.Buffers
	bs := &bfBandSet{rows: bfBandPlan.Rows(r.h, n)}
	for b := 0; b < n; b++ {
		bs.unpack = append(bs.unpack, made.Uniform(g, bfParamBytes))
		if len(r.levels) > 1 {
			y0, y1 := bs.rows[b], bs.rows[b+1]
			sub := r.levels[1]
			p := bfParams{Width: uint32(sub.w), Height: uint32((y1+1)/2 - y0/2), SrcWidth: uint32(r.w), SrcHeight: uint32(y1 - y0)}
			bs.sub = append(bs.sub, webgpu.UniformOf(g, &made, &p))
		}
	}
	if bfBandWork {
		bs.head = r.bandHeads(g, &made, bs.rows)
	}
	if made.Err != nil {
		err := made.Err
		for _, b := range made.Take() { // on the device thread: not Device.Free, which would wait for itself
			b.Release()
		}
		return nil, err
	}
	r.traceHeads(bs)
	for _, b := range made.List {
		r.own.Add(b)
	}
	if r.pipe.bands == nil {
		r.pipe.bands = map[int]*bfBandSet{}
	}
	r.pipe.bands[n] = bs
	return bs, nil
}

// writeBandParams writes the bands' unpack blocks for dist's layout when
// they hold another (a queue write, ordered before the next submit).
func (r *butteraugliRef) writeBandParams(g *webgpu.GPU, bs *bfBandSet, dist *zenmetrics.Image) {
	p := r.unpackParams(dist, 0)
	if bs.keySet && bs.key == p {
		return
	}
	for b := range bs.unpack {
		q := p
		q.Height = uint32(bs.rows[b+1] - bs.rows[b])
		g.Write(bs.unpack[b], 0, q.bytes())
	}
	bs.key, bs.keySet = p, true
}

// encodeBand records band b of a banded score (device thread): the copy of
// its slot into the upload buffer, the unpack of its rows and the 2×2
// subsample of its half-resolution rows, each kernel bound to the band's
// windows of its buffers (band starts are multiples of 256 rows, so every
// window starts on a 256-byte boundary), then, with band work, both
// levels' head windows (window.go; the last band's finish the heads). The
// slot may still be mapped.
func (r *butteraugliRef) encodeBand(g *webgpu.GPU, e *webgpu.Encoder, bs *bfBandSet, dist *zenmetrics.Image, b int, st *webgpu.StagingSlot) error {
	need := bfRawBytes(dist)
	lo := int64(bs.rows[b]) * int64(dist.Stride)
	hi := int64(bs.rows[b+1]) * int64(dist.Stride)
	if b == len(bs.rows)-2 {
		hi = need
	}
	n := (hi - lo + 3) &^ 3
	if err := r.up.CopyFilled(g, e, &r.own, st, lo, n, need); err != nil {
		return err
	}
	y0, y1 := bs.rows[b], bs.rows[b+1]
	full := r.levels[0]
	plane := webgpu.Range{Off: 4 * int64(y0) * int64(r.w), Size: 4 * int64(y1-y0) * int64(r.w)}
	lut := r.luts[dist.Format.BytesPerSample()]
	r.mark(e, "unpack", full)
	e.DispatchRanges(r.k.unpack, webgpu.Groups(r.w, 16), webgpu.Groups(y1-y0, 16), 1,
		[]*webgpu.Buffer{bs.unpack[b], lut, r.up.Raw, full.lin[0], full.lin[1], full.lin[2]},
		[]webgpu.Range{{}, {}, {Off: lo, Size: n}, plane, plane, plane})
	if len(r.levels) > 1 {
		sub := r.levels[1]
		s0, s1 := y0/2, (y1+1)/2
		half := webgpu.Range{Off: 4 * int64(s0) * int64(sub.w), Size: 4 * int64(s1-s0) * int64(sub.w)}
		r.mark(e, "subsample", sub)
		e.DispatchRanges(r.k.subsample, webgpu.Groups(sub.w, 16), webgpu.Groups(s1-s0, 16), 1,
			[]*webgpu.Buffer{bs.sub[b], full.lin[0], full.lin[1], full.lin[2], sub.lin[0], sub.lin[1], sub.lin[2]},
			[]webgpu.Range{{}, plane, plane, plane, half, half, half})
	}
	if bs.head != nil {
		for li, lv := range r.levels {
			r.encodeHead(e, lv, lv.dist.xyb(lv), bs.head[b][li])
		}
	}
	return nil
}

// submitBand records and submits band b (not the last) of a banded score
// under r.mu: its slot is filled. It sets *raw to the upload buffer it
// copied into and *took to the time Queue.Submit took.
func (r *butteraugliRef) submitBand(ctx context.Context, dist *zenmetrics.Image, n, b int, st *webgpu.StagingSlot,
	raw **webgpu.Buffer, took *time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return zenmetrics.ErrReleased
	}
	return r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		if _, err := r.lut(g, dist.Format.BytesPerSample()); err != nil {
			return err
		}
		bs, err := r.bandSet(g, n)
		if err != nil {
			return err
		}
		e := g.Encoder()
		if err := r.encodeBand(g, e, bs, dist, b, st); err != nil {
			e.Discard()
			return err
		}
		r.writeBandParams(g, bs, dist)
		st.Unmap(g, 0, 0) // the final submit books the whole image
		*raw = r.up.Raw
		t := time.Now()
		err = e.Submit()
		*took = time.Since(t)
		return err
	})
}

// drain empties a submitted score's read-backs unread (device thread).
func (c *bfCmd) drain() {
	_ = c.rb.Read(nil)
	if c.rdm != nil {
		_ = c.rdm.Read(nil)
	}
}

// submitPiped submits a pipelined score's command buffer *c (nil: record
// it now) under r.mu, r.pipe.seq held, and reports whether its first wait
// slice found the GPU done and read it (read). Commands recorded against
// an upload buffer that has since been replaced (by another caller's
// image of another stride) are recorded again, every band included. On
// error whatever was recorded or submitted is dropped or drained.
func (r *butteraugliRef) submitPiped(ctx context.Context, dist *zenmetrics.Image, c **bfCmd, slots []*webgpu.StagingSlot,
	raws []*webgpu.Buffer, n int, fill time.Duration, read func() error, ph *upband.Phases) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		upband.DiscardLater(r.dev, c, discardCmd)
		return false, zenmetrics.ErrReleased
	}
	used, submitted, done := false, false, false
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		used = true
		t := time.Now()
		stale := *c == nil || (*c).raw != r.up.Raw
		for _, raw := range raws[:n-1] {
			stale = stale || raw != r.up.Raw
		}
		if stale {
			if *c != nil {
				(*c).e.Discard()
				*c = nil
			}
			var err error
			if *c, err = r.record(g, dist, slots, n, 0); err != nil {
				return err
			}
		}
		if n > 1 {
			r.writeBandParams(g, r.pipe.bands[n], dist)
		} else {
			for v := 0; v < r.variants(dist); v++ {
				r.writeUnpack(g, dist, v)
			}
		}
		slots[n-1].Unmap(g, bfRawBytes(dist), fill)
		if err := (*c).e.Submit(); err != nil {
			return err
		}
		submitted = true
		var err error
		done, err = ph.FirstSlice(t, (*c).rb, bfWaitSlice, 0, read)
		return err
	})
	if err != nil {
		// The call may not have run, or may still be running (Do returned
		// early on ctx): clean up on the device thread after it.
		_ = r.dev.Do(context.Background(), func(*webgpu.GPU) error {
			if submitted && !done {
				(*c).drain()
			} else if !used && *c != nil {
				(*c).e.Discard()
			}
			return nil
		})
		return false, err
	}
	return done, nil
}
