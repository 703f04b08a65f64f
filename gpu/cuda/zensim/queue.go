package zensim

import (
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// The kernel sequences, written against a launcher and buffers only (no
// device, no uploads), so that the tests replay them without a GPU and
// check every launch (launch_test.go) or run them on the CPU
// (emulate_test.go).

// layout describes the raw pixels in the upload buffer.
type layout struct {
	stride, channels, bps int
	alpha                 int // 1: the last sample is alpha
}

// units is the column units of a pw-wide plane: pw/8 groups of 8 columns
// (zensim's vector loop), then pw mod 8 single columns (its scalar tail).
func units(pw int) int { return pw/8 + pw%8 }

// strips is the number of zensim strips (16 output rows) of h rows.
func strips(h int) int { return (h + strip - 1) / strip }

// slot is one scorer's device scratch with its worker (stream, staging):
// the raw upload, the distorted pyramid (one buffer of three planes per
// scale), the horizontal blur of a scale (three channels, float4 per
// pixel, scale 0's size, reused), the records of a scale (vstats → chain,
// reused), the strip sums (chain → merge, reused), the results and the
// identical-image flag.
type slot struct {
	wk    *cuda.Worker
	raw   *cuda.Buffer
	dist  []*cuda.Buffer
	hb    *cuda.Buffer
	lanes *cuda.Buffer
	sums  *cuda.Buffer
	res   *cuda.Buffer
	flag  *cuda.Buffer
}

// resBytes is the results: NQ doubles per channel and scale.
const resBytes = int64(8 * nq * 3 * 4)

// outBytes is the read-back: the results, then the flag.
const outBytes = resBytes + 4

// pyramidSizes is the size of each scale's buffer (three planes).
func pyramidSizes(dims [][2]int) []int64 {
	out := make([]int64, len(dims))
	for s, d := range dims {
		out[s] = 12 * int64(d[0]) * int64(d[1])
	}
	return out
}

// slotSizes is the size of every buffer of a slot for a scale list dims
// and uploads of up to raw bytes, in fillSlot's order: raw, the pyramid,
// hb, lanes, sums, res, flag.
func slotSizes(dims [][2]int, raw int64) []int64 {
	out := append([]int64{raw}, pyramidSizes(dims)...)
	var lanes, sums int64
	for _, d := range dims {
		ns := int64(strips(d[1]))
		lanes = max(lanes, 4*3*ns*int64(units(d[0]))*strip*nq)
		sums = max(sums, 8*3*ns*nq)
	}
	return append(out, 16*3*int64(dims[0][0])*int64(dims[0][1]), lanes, sums, resBytes, 4)
}

// fillSlot allocates a slot's device buffers with alloc (the device, or
// the tests' fake allocator), in slotSizes' order.
func fillSlot(s *slot, dims [][2]int, raw int64, alloc func(int64) *cuda.Buffer) {
	sz := slotSizes(dims, raw)
	s.raw = alloc(sz[0])
	s.dist = make([]*cuda.Buffer, len(dims))
	for i := range dims {
		s.dist[i] = alloc(sz[1+i])
	}
	rest := sz[1+len(dims):]
	s.hb, s.lanes, s.sums, s.res, s.flag = alloc(rest[0]), alloc(rest[1]), alloc(rest[2]), alloc(rest[3]), alloc(rest[4])
}

// buffers lists the slot's device buffers.
func (s *slot) buffers() []*cuda.Buffer {
	out := append([]*cuda.Buffer{s.raw}, s.dist...)
	return append(out, s.hb, s.lanes, s.sums, s.res, s.flag)
}

// queueXYB converts rows [y0, y1) of the raw image (w × h) into scale 0's
// planes out (dims[0][0] wide); with cmp (ref not nil) it also compares
// them with ref's and sets flag where any bit differs.
func queueXYB(q launch.Launcher, k *kernels, w, h, pw, y0, y1 int, lay layout, raw, tab, ref, out, flag *cuda.Buffer) error {
	if y1 <= y0 {
		return nil
	}
	cmp := 0
	if ref != nil {
		cmp = 1
	}
	g, b := pxGrid(pw, y1-y0)
	return q.Launch(&k.xyb, g, b, raw, tab, w, pw, h, y0, y1, lay.stride, lay.channels, lay.bps, lay.alpha, cmp, ref, out, flag)
}

// converter is the callback of an overlapped upload of total raw bytes (a
// w×h image): given the bytes that have arrived (a prefix), it queues the
// conversion of the rows they complete and have not been converted yet.
func converter(q launch.Launcher, k *kernels, w, h, pw int, total int64, lay layout, raw, tab, ref, out, flag *cuda.Buffer) func(end int64) error {
	done := 0
	return func(end int64) error {
		rows := h
		if end < total {
			rows = int(end / int64(lay.stride)) // rows whose bytes have all arrived
		}
		if err := queueXYB(q, k, w, h, pw, done, rows, lay, raw, tab, ref, out, flag); err != nil {
			return err
		}
		done = max(done, rows)
		return nil
	}
}

// queuePyramid queues the scales 1.. of pyramid p from its scale 0.
func queuePyramid(q launch.Launcher, k *kernels, dims [][2]int, p []*cuda.Buffer) error {
	for s := 1; s < len(dims); s++ {
		g, b := pxGrid(dims[s][0], dims[s][1])
		if err := q.Launch(&k.down, g, b, p[s-1], dims[s-1][0], dims[s-1][1], dims[s][0], dims[s][1], p[s]); err != nil {
			return err
		}
	}
	return nil
}

// queueStats queues, after the distorted pyramid, every scale's blurs,
// records, strip sums and their merge into s.res.
func queueStats(q launch.Launcher, k *kernels, dims [][2]int, s *slot, ref []*cuda.Buffer) error {
	for sc, d := range dims {
		pw, h, m := d[0], d[1], modesOf(sc)
		ns := strips(h)
		if err := q.Launch(&k.hblur, cuda.Dim3{X: cuda.Groups(h, hblurRows), Y: 3, Z: 1}, cuda.Dim3{X: hblurThreads, Y: 1, Z: 1},
			ref[sc], s.dist[sc], pw, h, m, s.hb); err != nil {
			return err
		}
		if err := q.Launch(&k.vstats, cuda.Dim3{X: cuda.Groups(pw, vstatsThreads), Y: uint32(ns), Z: 3}, cuda.Dim3{X: vstatsThreads, Y: 1, Z: 1},
			ref[sc], s.dist[sc], s.hb, pw, h, m, s.lanes); err != nil {
			return err
		}
		if err := q.Launch(&k.chain, cuda.Dim3{X: uint32(ns), Y: 3, Z: 1}, cuda.Dim3{X: chainThreads, Y: 1, Z: 1},
			s.lanes, pw, h, m, s.sums); err != nil {
			return err
		}
		if err := q.Launch(&k.merge, cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: mergeThreads, Y: 1, Z: 1},
			s.sums, h, sc, s.res); err != nil {
			return err
		}
	}
	return nil
}
