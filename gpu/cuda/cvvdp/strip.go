package cvvdp

import (
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// Strips (zenmetrics.ModeStrip): the geometry, the memory model and the
// launch sequences, the twin of gpu/webgpu/cvvdp/strip.go.
//
// A whole image holds per pixel, besides the raw upload: the reference's
// R·S·gain and S on every band (24 bytes × ~4/3), the distorted image's
// Gaussian pyramid (12 × ~4/3) and three full-size plane triples for a
// band's per-pixel work (36). In strips the Gaussian pyramid stays whole
// on the device: every level is needed to build the next, and the base
// band's background is a mean over its whole level. A band's per-pixel
// work runs on windows of its rows instead: the rows a window owns (whose
// sums and map values it writes) and halo rows either side, the reach of
// the masker's vertical blur, the only vertical filter of that work (the
// expand reads the coarser Gaussian level, which is whole). The raw
// pixels travel in crops of a window's height, each unpacked into level 0
// as it arrives. The reference's planes either stay on the device whole
// (kept: 32 bytes per pixel, no traffic per score) or, as on WebGPU, wait
// on the host window by window and are uploaded with each window (the
// device then holds about 16 bytes per pixel and five window-sized plane
// triples).
//
// The strings of per-pixel operations are the whole image's: every window
// computes its rows from the same inputs with the same kernels (which
// index the band's own rows: reflection at the band's edges, the
// coarser level's rows), and the owned rows tile each band, so the row
// sums written into the image's row-sum array, their totals per band (in
// the same order, by the same kernel), the base band and the map planes
// are the whole image's bit for bit, and so the JOD and the heatmap
// (TestEmulatedStrips, TestStripsGPU).

// halo is the rows a window adds either side of its owned rows: the
// masker's vertical blur radius (pu_dilate · 2, the 13 taps of pu13).
const halo = 6

// minOwned is the fewest owned rows a planned window of the finest band
// has (fewer, and the halos dominate the work). A forced strip height
// (Options.StripHeight) may go down to 1.
const minOwned = 16

// longOwned is the owned rows from which a plan keeps the reference on
// the device: its windows are then long enough that the halos cost little,
// and a score uploads only the distorted pixels.
const longOwned = 128

// forceKeep, when not nil, makes a forced strip height keep the reference
// on the device or on the host: the tests run both on one device.
var forceKeep *bool

// stripPlan is the geometry of a strip reference.
type stripPlan struct {
	p *cpucv.Plan
	// winRows is the finest band's window height, and the rows of a raw
	// crop; a window of band b has at most winRows·W[0] pixels.
	winRows int
	keep    bool // the reference's band planes stay on the device
	distMap bool
}

// winPx is the pixels a window plane holds.
func (sp *stripPlan) winPx() int64 { return int64(sp.p.W[0]) * int64(sp.winRows) }

// windows cuts band b into windows of at most winPx pixels: owned rows in
// runs of the rows that fit less the halos, each computed with halo rows
// either side (within the band). A band that fits is one window.
func (sp *stripPlan) windows(b int) []window {
	p := sp.p
	h := p.H[b]
	rows := int(sp.winPx() / int64(p.W[b]))
	if rows >= h {
		return []window{whole(h)}
	}
	// The planner keeps winRows at least 2·halo + 1 unless the finest band
	// fits whole (then so does every band): step ≥ 1.
	step := max(1, rows-2*halo)
	var out []window
	for o0 := 0; o0 < h; o0 += step {
		o1 := min(o0+step, h)
		out = append(out, window{max(0, o0-halo), min(h, o1+halo), o0, o1})
	}
	return out
}

// crops cuts level 0's rows into the raw upload's crops of winRows rows.
func (sp *stripPlan) crops() [][2]int {
	h := sp.p.H[0]
	var out [][2]int
	for c0 := 0; c0 < h; c0 += sp.winRows {
		out = append(out, [2]int{c0, min(h, c0+sp.winRows)})
	}
	return out
}

// refSizes is every buffer of a strip reference, in prepareStrips' order:
// the display's tables and constants, (kept) every band's R·S·gain and S,
// and the base band's S and contrast, as a whole image's.
func (sp *stripPlan) refSizes() []int64 {
	all := refSizes(sp.p)
	if sp.keep {
		return all
	}
	return []int64{all[0], all[1], all[len(all)-1]}
}

// slotSizes is every buffer of a strip slot for raw crops of up to raw
// bytes, in fillStripSlot's order: the raw crop, the Gaussian pyramid
// (whole), the window planes du, mm and hb, the row sums (every row of
// every band, as a whole image's), the results, with the map its planes
// per level (whole), and (not kept) the windows of the reference's
// planes. With one window of all rows and the reference kept, these are
// a whole image's slot's buffers exactly.
func (sp *stripPlan) slotSizes(raw int64) []int64 {
	p := sp.p
	out := []int64{raw}
	for l := 0; l < p.Levels; l++ {
		out = append(out, 12*px(p, l))
	}
	win := 12 * sp.winPx()
	out = append(out, win, win, win, 24*sumRows(p), resBytes(p))
	if sp.distMap {
		for l := 0; l < p.Levels; l++ {
			out = append(out, 4*px(p, l))
		}
	}
	if !sp.keep {
		out = append(out, win, win)
	}
	return out
}

// memory is the device bytes of a strip reference and its first slot,
// as the allocator rounds them.
func (sp *stripPlan) memory(raw int64) int64 {
	return cuda.AllocSizes(sp.refSizes()) + cuda.AllocSizes(sp.slotSizes(raw))
}

// outBytes is the page-locked read-back a slot needs: the results, the
// map when asked for and, not kept, a window of the reference's two
// planes (read back at Prepare).
func (sp *stripPlan) outBytes() int64 {
	n := resBytes(sp.p)
	if sp.distMap {
		n += 4 * px(sp.p, 0)
	}
	if !sp.keep {
		n = max(n, 24*sp.winPx())
	}
	return n
}

// planStrips picks the strip plan of the image of plan p, whose crops of
// rows rows upload rawOf(rows) bytes, within budget bytes (< 0: unknown,
// anything goes): the largest windows with the reference kept while they
// stay long (longOwned), else the largest with the reference on the host,
// else an OutOfMemoryError. force > 0 forces the finest band's owned rows
// per window (keeping the reference when that fits, or as forceKeep
// says). The image must be within the kernels' indexing (fits): the
// pyramid's and the map's levels stay whole.
func planStrips(p *cpucv.Plan, rawOf func(rows int) int64, distMap bool, budget int64, force int) (*stripPlan, error) {
	w, h := p.W[0], p.H[0]
	plan := func(rows int, keep bool) *stripPlan {
		return &stripPlan{p: p, winRows: rows, keep: keep, distMap: distMap}
	}
	fitsIn := func(rows int, keep bool) bool {
		return budget < 0 || plan(rows, keep).memory(rawOf(rows)) <= budget
	}
	if !fits(w, h) {
		return nil, &zenmetrics.OutOfMemoryError{Backend: "cuda", Requested: -1, Free: budget,
			Detail: fmt.Sprintf("a %dx%d image exceeds the CVVDP kernels' indexing", w, h)}
	}
	if force > 0 {
		rows := min(h, force+2*halo)
		keep := fitsIn(rows, true)
		if forceKeep != nil {
			keep = *forceKeep
		}
		return plan(rows, keep), nil
	}
	lo := min(h, minOwned+2*halo)
	// largest is the tallest window from lo up that fits (memory grows
	// with the rows), 0 if none does.
	largest := func(keep bool) int {
		if !fitsIn(lo, keep) {
			return 0
		}
		best, hi := lo, h
		for best < hi {
			mid := (best + hi + 1) / 2
			if fitsIn(mid, keep) {
				best = mid
			} else {
				hi = mid - 1
			}
		}
		return best
	}
	if rows := largest(true); rows > 0 && rows >= min(h, longOwned+2*halo) {
		return plan(rows, true), nil
	}
	// The host plan holds less than the kept one at every height (its two
	// window planes are less than the bands' whole planes), so it is the
	// last resort.
	if rows := largest(false); rows > 0 {
		return plan(rows, false), nil
	}
	return nil, &zenmetrics.OutOfMemoryError{Backend: "cuda", Requested: plan(lo, false).memory(rawOf(lo)), Free: budget,
		Detail: fmt.Sprintf("no CVVDP strip plan of a %dx%d image fits: not even %d-row windows next to its pyramid", w, h, lo)}
}

// stripSlot is one scorer of a strip reference: a slot whose window
// planes (du, mm, hb) hold a window and whose raw buffer a crop, with
// (not kept) the windows of the reference's planes and the crop upload's
// event.
type stripSlot struct {
	slot
	rpW, sW *cuda.Buffer
	up      *cuda.StripUpload
}

// fillStripSlot allocates a strip slot's buffers with alloc, in
// stripPlan.slotSizes' order.
func fillStripSlot(s *stripSlot, sp *stripPlan, raw int64, alloc func(int64) *cuda.Buffer) {
	sizes := sp.slotSizes(raw)
	next := func() *cuda.Buffer { b := alloc(sizes[0]); sizes = sizes[1:]; return b }
	s.raw = next()
	s.g = make([]*cuda.Buffer, sp.p.Levels)
	for l := range s.g {
		s.g[l] = next()
	}
	s.du, s.mm, s.hb, s.rows, s.res = next(), next(), next(), next(), next()
	if sp.distMap {
		s.heat = make([]*cuda.Buffer, sp.p.Levels)
		for l := range s.heat {
			s.heat[l] = next()
		}
	}
	if !sp.keep {
		s.rpW, s.sW = next(), next()
	}
}

// buffers lists the strip slot's device buffers (nil ones left out).
func (s *stripSlot) buffers() []*cuda.Buffer {
	out := s.slot.buffers()
	for _, b := range []*cuda.Buffer{s.rpW, s.sW} {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}

// uploader queues an upload of src into dst in stream order with the
// kernels queued so far (cuda.Worker.Upload on a device; the tests'
// replay otherwise).
type uploader func(dst *cuda.Buffer, src []byte) error

// cropUploader queues the upload of a crop's raw bytes into the slot's
// raw buffer, calling ready with the bytes that have arrived (cuda.
// StripUpload.Upload on a device: after the kernels that read the
// previous crop).
type cropUploader func(dst *cuda.Buffer, src []byte, ready func(end int64) error) error

// stripRun is what the strip queues need of a reference: its kernels,
// plan, device buffers (the tables, the base band and, kept, every band's
// planes) and, not kept, every window's planes on the host.
type stripRun struct {
	k   *kernels
	sp  *stripPlan
	ref refBufs
	// host[b][i] is band b's window i's R·S·gain then S, three planes
	// each of the window's rows, as the window buffers hold them.
	host [][][]byte
}

// queueImage queues im's upload crop by crop into s.raw, each crop's rows
// unpacked into level 0 as they arrive, then the Gaussian pyramid.
func (sr *stripRun) queueImage(q launch.Launcher, up cropUploader, s *stripSlot, im *zenmetrics.Image) error {
	p, lay := sr.sp.p, layoutOf(im)
	for _, c := range sr.sp.crops() {
		crop := &zenmetrics.Image{Width: im.Width, Height: c[1] - c[0], Stride: im.Stride, Format: im.Format,
			Pix: im.Pix[c[0]*im.Stride:]}
		total := cuda.RawBytes(crop)
		if err := up(s.raw, crop.Pix[:total], unpacker(q, sr.k, p, c[0], c[1], total, lay, &sr.ref, &s.slot)); err != nil {
			return err
		}
	}
	return queuePyramid(q, sr.k, p, &s.slot)
}

// queuePrepare queues a strip reference's half: ref's upload and pyramid,
// then (kept) every band's planes whole into sr.ref, as a whole image's,
// or band by band, window by window, into the slot's window planes, save
// called after each window's launches to take them to the host; then the
// base band's.
func (sr *stripRun) queuePrepare(q launch.Launcher, up cropUploader, s *stripSlot, ref *zenmetrics.Image, save func(b, i int, win window) error) error {
	p, k := sr.sp.p, sr.k
	if err := sr.queueImage(q, up, s, ref); err != nil {
		return err
	}
	for b := 0; b+1 < p.Levels; b++ {
		if sr.sp.keep {
			if err := queueRefBand(q, k, p, &s.slot, sr.ref.kb, b, whole(p.H[b]), sr.ref.rp[b], sr.ref.s[b]); err != nil {
				return err
			}
			continue
		}
		for i, win := range sr.sp.windows(b) {
			if err := queueRefBand(q, k, p, &s.slot, sr.ref.kb, b, win, s.rpW, s.sW); err != nil {
				return err
			}
			if err := save(b, i, win); err != nil {
				return err
			}
		}
	}
	return queueBaseRef(q, k, p, &s.slot, &sr.ref)
}

// queueScore queues a strip score: dist's upload and pyramid, every band
// window by window (not kept: after the upload of the window's reference
// planes), then the base band, the sums and (with the map) the map, into
// s.g[0]: level 0 of the pyramid is read by nothing after the bands and
// the base band, and holds w×h floats three times over.
func (sr *stripRun) queueScore(q launch.Launcher, crop cropUploader, up uploader, s *stripSlot, dist *zenmetrics.Image) error {
	p, k := sr.sp.p, sr.k
	if err := sr.queueImage(q, crop, s, dist); err != nil {
		return err
	}
	for b := 0; b+1 < p.Levels; b++ {
		for i, win := range sr.sp.windows(b) {
			if sr.sp.keep {
				if err := queueDistBand(q, k, p, &s.slot, b, win, sr.ref.rp[b], sr.ref.s[b], 0, p.H[b]); err != nil {
					return err
				}
				continue
			}
			hb := sr.host[b][i]
			n := len(hb) / 2
			if err := up(s.rpW, hb[:n]); err != nil {
				return err
			}
			if err := up(s.sW, hb[n:]); err != nil {
				return err
			}
			if err := queueDistBand(q, k, p, &s.slot, b, win, s.rpW, s.sW, win.w0, win.rows()); err != nil {
				return err
			}
		}
	}
	return queueFinish(q, k, p, &s.slot, &sr.ref, s.g[0])
}

// windowBytes is the bytes of one of a window's reference planes (three
// float planes of its rows).
func windowBytes(p *cpucv.Plan, b int, win window) int64 {
	return 12 * int64(p.W[b]) * int64(win.rows())
}
