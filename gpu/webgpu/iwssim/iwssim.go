// Package iwssim is IW-SSIM (piq 0.8.0's information_weighted_ssim) on
// WebGPU: the host code that drives wgsl/iwssim_*.wgsl, written on the
// metric kit of package webgpu. Importing it registers the metric with
// every webgpu.Backend.
//
// # The cached-reference split
//
// The reference's side (its Laplacian pyramid, its local statistics, the
// neighbourhood covariance of every scale, its eigen-decomposition and
// vᵀC⁻¹v per block) is prepared by the float64 CPU reference cpu/iwssim,
// once per reference, and uploaded as float32 planes: the eigen-problems are
// tiny (10×10) and the covariance needs a float64 sum over every block,
// which float32 on the GPU would not reproduce. A score then runs entirely
// on the device, in one command buffer, and reads back two float32 sums per
// region row:
//
//	unpack       raw 8/16-bit samples -> luminance (v/max·255, rgb2yiq's Y)
//	4 × pyramid  down_x, down_y, up_x, up_y: band k and low-pass k+1
//	per scale    hpass: Gaussian (11) and 3-sums along x of a, a², a·b
//	             pix:   along y; cs, piq's information weight iw
//	             rows:  Σ cs·iw and Σ iw per region row (fixed tree)
//
// and the host adds the rows in order in float64 and takes piq's product.
// Every value has one writer and every sum a fixed order: scores are
// bit-identical run to run.
//
// # Strips
//
// With zenmetrics.ModeStrip the image is scored in horizontal bands
// (webgpu.PlanStrips, stripSpec says why a 160-row halo suffices): each
// band's crop goes through the same kernels as a whole image would, and the
// rows kernel keeps only the region rows whose centres lie in the band's
// interior at each scale, writing their sums where the whole image's would
// go. Owned values are computed from the same inputs in the same order, so
// a score in strips is the whole image's score bit for bit (TestStrips).
// The reference then stays on the host (the CPU reference) and each
// band's window of its planes is uploaded with the band; device memory is
// that of one crop.
package iwssim

import (
	"context"
	"fmt"
	"math"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuiw "github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/wgsl"
)

func init() { webgpu.Register(zenmetrics.IWSSIM, impl{}) }

const nScales = cpuiw.NumScales

// params mirrors iwssim_common.wgsl's Params (64 bytes).
type params struct {
	W, H, WL, HL, RW, RH  uint32
	Stride, Channels, BPS uint32
	NLam, LamOff, RowOff  uint32
	MaxV, Shift           float32
	Own0, NOwn            uint32
}

// K layout (iwssim_common.wgsl): 32 constants, then 16 per scale.
const (
	kPyr, kGauss, kBox, kC1, kC2, kNsq, kInvNsq2, kEps = 0, 5, 16, 17, 18, 19, 20, 21
	kLam                                               = 32
	kLen                                               = kLam + 16*nScales
)

// lowShift is subtracted from both images before the statistics of the
// last (low-pass) scale, whose values reach 255·16 (each of the four
// pyramid steps has gain 2): the midpoint keeps E[a²] − E[a]² from losing
// float32 digits to the mean. Bands are centred on zero and need none.
const lowShift = 255 * 16 / 2

type kernels struct {
	unpack, downX, downY, upX, upY, hpass, pix, rows *webgpu.Pipeline
}

const (
	wg2 = 16 // unpack and pyramid: 16×16
	wgX = 64 // hpass, pix: 64×4
	wgY = 4
	// wgRows is the rows kernel's workgroup (a power of two).
	wgRows = 256
)

func compile(g *webgpu.GPU) (*kernels, error) {
	return webgpu.Compiled(g, "iwssim", func(g *webgpu.GPU) (*kernels, error) {
		common, err := wgsl.Source("iwssim_common")
		if err != nil {
			return nil, err
		}
		var k kernels
		sq := webgpu.Constants{"WG_X": wg2, "WG_Y": wg2}
		st := webgpu.Constants{"WG_X": wgX, "WG_Y": wgY}
		return &k, webgpu.Compile(g, []webgpu.Kernel{
			{File: "iwssim_unpack", Entry: "unpack", Prefix: common, Constants: sq, Dst: &k.unpack},
			{File: "iwssim_down_x", Entry: "down_x", Prefix: common, Constants: sq, Dst: &k.downX},
			{File: "iwssim_down_y", Entry: "down_y", Prefix: common, Constants: sq, Dst: &k.downY},
			{File: "iwssim_up_x", Entry: "up_x", Prefix: common, Constants: sq, Dst: &k.upX},
			{File: "iwssim_up_y", Entry: "up_y", Prefix: common, Constants: sq, Dst: &k.upY},
			{File: "iwssim_hpass", Entry: "hpass", Prefix: common, Constants: st, Dst: &k.hpass},
			{File: "iwssim_pix", Entry: "pix", Prefix: common, Constants: st, Dst: &k.pix},
			{File: "iwssim_rows", Entry: "rows", Prefix: common, Constants: webgpu.Constants{"WG": wgRows}, Dst: &k.rows},
		})
	})
}

// geometry is the size of every scale.
type geometry struct {
	w, h   int
	s      [nScales]struct{ w, h, rw, rh int }
	rowOff [nScales]int // offset of each scale's row sums
	rows   int          // Σ rh
}

func newGeometry(w, h int) geometry {
	gm := geometry{w: w, h: h}
	cw, ch := w, h
	for k := 0; k < nScales; k++ {
		gm.s[k].w, gm.s[k].h = cw, ch
		gm.s[k].rw, gm.s[k].rh = cw-10, ch-10
		gm.rowOff[k] = gm.rows
		gm.rows += ch - 10
		cw, ch = (cw+1)/2, (ch+1)/2
	}
	return gm
}

// bufferSizes lists the device buffers of a reference whose crops are
// rows tall (the whole image: rows = h), in upload's order, and their total
// with the uniforms and an upload of raw bytes (and its staging buffer from
// webgpu.StagingMin on). sumRows is the whole image's Σ rh.
func bufferSizes(w, rows, sumRows int, raw int64) (list []int64, total int64) {
	gm := newGeometry(w, rows)
	add := func(n int64) {
		n = max(n, 4)
		list = append(list, n)
		total += n
	}
	add(4 * kLen)
	for k := 0; k < nScales; k++ {
		s := gm.s[k]
		n, rn := int64(s.w)*int64(s.h), int64(max(s.rw, 0))*int64(max(s.rh, 0))
		planes := int64(5)
		if k == nScales-1 {
			planes = 2
		}
		add(4 * n)           // y
		add(4 * planes * rn) // refm
		add(4 * n)           // x
	}
	s0 := gm.s[0]
	add(4 * max(int64(s0.h)*int64((s0.w+1)/2), int64((s0.h+1)/2)*int64(s0.w))) // tmp
	add(4 * 3 * int64(s0.h) * int64(s0.rw))                                    // g
	add(4 * 3 * int64(s0.h) * int64(s0.rw))                                    // bx
	add(4 * 2 * int64(s0.rw) * int64(s0.rh))                                   // out
	add(4 * 2 * int64(sumRows))                                                // sums
	total += int64(1+2*nScales-1) * 64                                         // uniforms
	total += (raw + 3) &^ 3                                                    // raw upload
	if raw >= webgpu.StagingMin {
		total += (raw + 3) &^ 3 // its mapped staging buffer (Upload.Reserve)
	}
	return list, total
}

// reference is a prepared IW-SSIM reference on a WebGPU device.
type reference struct {
	dev    *webgpu.Device
	gm     geometry       // the whole image
	strips []webgpu.Strip // one strip {0, h, 0, h} for a whole image
	rows   int            // the tallest crop: the buffers' height
	k      *kernels
	// Strips only: the CPU reference, whose windows are uploaded per strip.
	cref *cpuiw.Reference
	data []cpuiw.ScaleData
	// nlam is each scale's number of eigenvalues (0: the last scale, no
	// weights).
	nlam [nScales]int
	// flatAt is the first scale at which the reference's band is flat (its
	// model zero), -1 if none; see uniform.
	flatAt int

	own        webgpu.Buffers
	up         webgpu.Upload
	kb         *webgpu.Buffer
	y, refm, x [nScales]*webgpu.Buffer
	tmp, g, bx *webgpu.Buffer
	out, sums  *webgpu.Buffer
	pUnpack    *webgpu.Buffer
	pPyr       [nScales - 1]*webgpu.Buffer
	pScale     [nScales]*webgpu.Buffer

	mu       sync.Mutex
	released bool
}

// Bytes is the device memory the reference holds (webgpu.ReferenceBytes).
func (r *reference) Bytes() int64 { return r.own.Bytes }

// Strips reports the strip count and that the reference is not resident
// on the device between scores when there is more than one (its windows
// are uploaded per strip) (webgpu.StripInfo).
func (r *reference) Strips() (int, bool) { return len(r.strips), len(r.strips) == 1 }

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// constants is the K buffer: the kernel constants and every scale's λ/σ².
func constants(data []cpuiw.ScaleData) []float32 {
	c := cpuiw.KernelConstants()
	k := make([]float32, kLen)
	for i, v := range c.Pyr {
		k[kPyr+i] = float32(v)
	}
	for i, v := range c.Gauss {
		k[kGauss+i] = float32(v)
	}
	k[kBox], k[kC1], k[kC2] = float32(c.Box), float32(c.C1), float32(c.C2)
	k[kNsq], k[kInvNsq2], k[kEps] = float32(c.SigmaNsq), float32(c.InvNsq2), float32(c.Eps)
	for s, d := range data {
		for i, l := range d.LamScaled {
			k[kLam+16*s+i] = float32(l)
		}
	}
	return k
}

// take takes every buffer (device thread) and writes the constants.
func (r *reference) take(g *webgpu.GPU, raw int64) error {
	o := &r.own
	sizes, _ := bufferSizes(r.gm.w, r.rows, r.gm.rows, raw)
	next := func() int64 { n := sizes[0]; sizes = sizes[1:]; return n }
	r.kb = o.Storage(g, next())
	for k := 0; k < nScales; k++ {
		r.y[k] = o.Storage(g, next())
		r.refm[k] = o.Storage(g, next())
		r.x[k] = o.Storage(g, next())
	}
	r.tmp = o.Storage(g, next())
	r.g = o.Storage(g, next())
	r.bx = o.Storage(g, next())
	r.out = o.Storage(g, next())
	r.sums = o.Storage(g, next())
	r.pUnpack = o.Uniform(g, 64)
	for k := range r.pPyr {
		r.pPyr[k] = o.Uniform(g, 64)
	}
	for k := range r.pScale {
		r.pScale[k] = o.Uniform(g, 64)
	}
	if o.Err != nil {
		return o.Err
	}
	if err := r.up.Reserve(g, o, raw); err != nil {
		return err
	}
	webgpu.WriteSlice(g, r.kb, 0, constants(r.data))
	return o.Err
}

// window writes the reference's planes for crop rows [C0, C1) of strip st
// into the device planes: per scale the band rows of the crop and the
// region rows that exist in the whole image (the others are never owned).
func (r *reference) window(g *webgpu.GPU, st webgpu.Strip) {
	cg := newGeometry(r.gm.w, st.Rows())
	for k, d := range r.data {
		c0 := st.C0 >> k
		cs := cg.s[k]
		webgpu.WriteSlice(g, r.y[k], 0, f32s(d.Y[c0*d.W:(c0+cs.h)*d.W]))
		maps := [][]float64{d.Mu, d.Vr}
		if d.SS != nil {
			maps = append(maps, d.Bm, d.Bv, d.SS)
		}
		rn := int64(max(cs.rw, 0)) * int64(max(cs.rh, 0))
		n := min(cs.rh, d.RH-c0)
		if n <= 0 {
			continue
		}
		for m, p := range maps {
			webgpu.WriteSlice(g, r.refm[k], int64(m)*rn*4, f32s(p[c0*d.RW:(c0+n)*d.RW]))
		}
	}
}

// stripParams writes the pyramid and per-scale parameters of strip st:
// the crop's sizes, and the region rows it owns at each scale (the centres
// of its interior rows there) with where their sums go. It returns how
// many rows each scale owns.
func (r *reference) stripParams(g *webgpu.GPU, st webgpu.Strip) (own [nScales]int) {
	cg := newGeometry(r.gm.w, st.Rows())
	for k := 0; k < nScales; k++ {
		s := cg.s[k]
		if k < nScales-1 {
			n := cg.s[k+1]
			p := params{W: uint32(s.w), H: uint32(s.h), WL: uint32(n.w), HL: uint32(n.h)}
			g.Write(r.pPyr[k], 0, webgpu.Bytes(&p))
		}
		lo, hi := st.WindowAt(k, r.gm.h)
		cLo, cHi := max(lo, gaussRad), min(hi, s.h-gaussRad)
		p := params{W: uint32(s.w), H: uint32(s.h), RW: uint32(s.rw), RH: uint32(s.rh),
			NLam: uint32(r.nlam[k]), LamOff: uint32(kLam + 16*k)}
		if r.nlam[k] == 0 {
			p.Shift = lowShift
		}
		if cHi > cLo {
			own[k] = cHi - cLo
			p.Own0, p.NOwn = uint32(cLo-gaussRad), uint32(own[k])
			p.RowOff = uint32(r.gm.rowOff[k] + cLo + st.C0>>k - gaussRad)
		}
		g.Write(r.pScale[k], 0, webgpu.Bytes(&p))
	}
	return own
}

// gaussRad is the Gaussian window's radius: region row i is centre row i+5.
const gaussRad = 5

// encode records the score of one strip whose crop is in r.up.Raw.
func (r *reference) encode(e *webgpu.Encoder, st webgpu.Strip, own [nScales]int) {
	k := r.k
	cg := newGeometry(r.gm.w, st.Rows())
	s0 := cg.s[0]
	e.Dispatch(k.unpack, webgpu.Groups(s0.w, wg2), webgpu.Groups(s0.h, wg2), 1, r.pUnpack, r.up.Raw, r.x[0])
	for l := 0; l < nScales-1; l++ {
		s, n := cg.s[l], cg.s[l+1]
		p := r.pPyr[l]
		e.Dispatch(k.downX, webgpu.Groups(n.w, wg2), webgpu.Groups(s.h, wg2), 1, p, r.kb, r.x[l], r.tmp)
		e.Dispatch(k.downY, webgpu.Groups(n.w, wg2), webgpu.Groups(n.h, wg2), 1, p, r.kb, r.tmp, r.x[l+1])
		e.Dispatch(k.upX, webgpu.Groups(s.w, wg2), webgpu.Groups(n.h, wg2), 1, p, r.kb, r.x[l+1], r.tmp)
		e.Dispatch(k.upY, webgpu.Groups(s.w, wg2), webgpu.Groups(s.h, wg2), 1, p, r.kb, r.tmp, r.x[l])
	}
	for l := 0; l < nScales; l++ {
		if own[l] == 0 {
			continue
		}
		s := cg.s[l]
		p := r.pScale[l]
		e.Dispatch(k.hpass, webgpu.Groups(s.rw, wgX), webgpu.Groups(s.h, wgY), 1, p, r.kb, r.x[l], r.y[l], r.g, r.bx)
		e.Dispatch(k.pix, webgpu.Groups(s.rw, wgX), webgpu.Groups(s.rh, wgY), 1, p, r.kb, r.g, r.bx, r.refm[l], r.out)
		e.Dispatch(k.rows, uint32(own[l]), 1, 1, p, r.out, r.sums)
	}
}

// pool adds each scale's row sums in row order (float64) and takes piq's
// product Π |Σ cs·iw / Σ iw|^w_k.
func (r *reference) pool(sums []float32) (float64, error) {
	w := cpuiw.KernelConstants().Weights
	score := 1.0
	for k := 0; k < nScales; k++ {
		s := r.gm.s[k]
		var num, den float64
		for i := 0; i < s.rh; i++ {
			j := 2 * (r.gm.rowOff[k] + i)
			num += float64(sums[j])
			den += float64(sums[j+1])
		}
		if den == 0 {
			return 0, cpuiw.ZeroWeightsError(k)
		}
		score *= math.Pow(math.Abs(num/den), w[k])
	}
	return score, nil
}

// uniform reports whether every pixel of im has the same samples (alpha
// included, which IW-SSIM ignores; a uniform colour is enough). Such an
// image is flat at every scale, so against a reference that is flat at
// scale k every weight there is zero: the CPU reference refuses the pair
// at the first such k (its weights at earlier scales come from the
// reference's model and are not all zero), and so does this backend,
// without trusting float32 to reproduce exact zeros.
func uniform(im *zenmetrics.Image) bool {
	bpp := im.Format.BytesPerPixel()
	first := im.Pix[:bpp]
	for y := 0; y < im.Height; y++ {
		row := im.Row(y)
		for x := 0; x < len(row); x += bpp {
			if string(row[x:x+bpp]) != string(first) {
				return false
			}
		}
	}
	return true
}

// Score implements zenmetrics.Reference.
func (r *reference) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	if err := dist.Validate(); err != nil {
		return zenmetrics.Score{}, err
	}
	if err := webgpu.SizeMismatch(r.gm.w, r.gm.h, dist); err != nil {
		return zenmetrics.Score{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return zenmetrics.Score{}, zenmetrics.ErrReleased
	}
	if r.flatAt >= 0 && uniform(dist) {
		// The CPU reference's answer, decided on the host: float32 leaves
		// rounding noise in a flat image's bands whose 3×3 variance can
		// exceed piq's float64 threshold, which would weight it.
		return zenmetrics.Score{}, cpuiw.ZeroWeightsError(r.flatAt)
	}
	sums := make([]float32, 2*r.gm.rows)
	err = r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		f := dist.Format
		p := params{W: uint32(dist.Width), Stride: uint32(dist.Stride),
			Channels: uint32(f.Channels()), BPS: uint32(f.BytesPerSample()), MaxV: float32(f.MaxValue())}
		for i, st := range r.strips {
			if err := ctx.Err(); err != nil {
				return err
			}
			// Queue writes run in order with the submissions around them,
			// so the previous strip's work has read these buffers.
			p.H = uint32(st.Rows())
			g.Write(r.pUnpack, 0, webgpu.Bytes(&p))
			own := r.stripParams(g, st)
			if r.cref != nil {
				r.window(g, st)
			}
			e := g.Encoder()
			if err := r.up.Put(g, e, &r.own, webgpu.StripCrop(dist, st.C0, st.C1)); err != nil {
				e.Discard()
				return err
			}
			r.encode(e, st, own)
			if i+1 < len(r.strips) {
				if err := e.Submit(); err != nil {
					return err
				}
				continue
			}
			return webgpu.SubmitRead(e, r.sums, 0, sums)
		}
		return nil
	})
	if err != nil {
		return zenmetrics.Score{}, err
	}
	v, err := r.pool(sums)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.IWSSIM, Value: v}, nil
}

// Release implements zenmetrics.Reference.
func (r *reference) Release() {
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return
	}
	r.released = true
	bufs := r.own.Take()
	if r.cref != nil {
		r.cref.Release()
		r.cref, r.data = nil, nil
	}
	r.mu.Unlock()
	r.dev.Free(bufs)
}

// impl is IW-SSIM's webgpu.MetricImpl.
type impl struct{}

// worstRaw is the upload of a w×h RGBA16 image, the largest format.
func worstRaw(w, h int) int64 { return int64(w) * int64(h) * 8 }

// stripSpec: the halo is the reach of the coarsest scale's statistics.
// A band value at level k depends on the crop within a few rows of its
// own (the 5-tap filters reflect at a crop edge, which corrupts at most 2
// rows of each low-pass level and 7 of each band next to an interior crop
// edge), and the 11×11 window adds 5 rows at level k, 5·2^k rows of the
// image: at level 4, (5 + 2)·16 = 112 rows. 160 rows (a multiple of the
// alignment) leave a margin; TestStrips checks that strips give the whole
// image's score bit for bit. Crops start at multiples of 16 so that every
// level's decimation keeps the whole image's rows, and are at least 176
// rows tall so that the fifth level still has an 11-row window.
var stripSpec = webgpu.StripSpec{Halo: 160, Align: 16, MinCrop: 176}

// plan cuts an image into strips: band interior rows if given (rounded to
// the alignment), else the tallest crops whose buffers fit avail bytes
// (unknown: -1) and the binding limits. total is the device memory.
func plan(b *webgpu.Backend, w, h, band int) (strips []webgpu.Strip, rows int, total int64, err error) {
	lim := b.Device().Limits()
	sumRows := newGeometry(w, h).rows
	fits := func(rows int) (int64, bool) {
		raw := worstRaw(w, rows)
		list, t := bufferSizes(w, rows, sumRows, raw)
		for _, n := range append(list, raw) {
			if uint64(n) > lim.MaxStorageBufferBindingSize || uint64(n) > lim.MaxBufferSize {
				return t, false
			}
		}
		return t, true
	}
	if band <= 0 {
		avail := b.Available()
		lo, hi := stripSpec.MinCrop, h // largest crop rows that fit
		if t, ok := fits(lo); !ok || (avail >= 0 && t > avail) {
			return nil, 0, t, fmt.Errorf("%w: IW-SSIM strips: not even a %d-row crop of a %d-wide image fits", zenmetrics.ErrOutOfMemory, lo, w)
		}
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if t, ok := fits(mid); ok && (avail < 0 || t <= avail) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		var ok bool
		if band, ok = webgpu.StripBand(h, stripSpec, int64(lo)); !ok {
			return nil, 0, 0, fmt.Errorf("%w: IW-SSIM strips: no band fits a %d-row crop", zenmetrics.ErrOutOfMemory, lo)
		}
	}
	strips, err = webgpu.PlanStrips(h, band, stripSpec)
	if err != nil {
		return nil, 0, 0, err
	}
	for _, st := range strips {
		rows = max(rows, st.Rows())
	}
	t, ok := fits(rows)
	if !ok {
		return nil, 0, t, fmt.Errorf("%w: IW-SSIM strips: a %d-row crop exceeds the device's buffer limits", zenmetrics.ErrUnsupported, rows)
	}
	return strips, rows, t, nil
}

// Estimate is the device memory of a reference and its scoring scratch
// for the worst case RGBA16 upload; ok is false below piq's minimum size,
// for other modes than full and strips, and when a buffer or a dispatch
// exceeds the device's limits.
func (impl) Estimate(b *webgpu.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	mw, mh := cpuiw.MinSize()
	if w < mw || h < mh {
		return 0, false
	}
	if webgpu.Groups(h, wgY) > 65535 || webgpu.Groups(w, wg2) > 65535 {
		return 0, false
	}
	switch mode {
	case zenmetrics.ModeFull:
		strips, rows, t, err := plan(b, w, h, h)
		if err != nil || len(strips) != 1 || rows != h || h-10 > 65535 {
			return t, false
		}
		return t, true
	case zenmetrics.ModeStrip:
		_, _, t, err := plan(b, w, h, 0)
		return t, err == nil
	}
	return 0, false
}

// Prepare prepares the reference on the CPU (cpu/iwssim, float64) and
// uploads it (whole images) or keeps it to upload each strip's window
// (ModeStrip); refused above the VRAM budget and where Estimate declines.
func (impl) Prepare(ctx context.Context, b *webgpu.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	mw, mh := cpuiw.MinSize()
	if ref.Width < mw || ref.Height < mh {
		return nil, &zenmetrics.TooSmallError{Metric: zenmetrics.IWSSIM, Width: ref.Width, Height: ref.Height, MinWidth: mw, MinHeight: mh}
	}
	w, h := ref.Width, ref.Height
	band := h
	switch opt.Mode {
	case zenmetrics.ModeFull:
	case zenmetrics.ModeStrip:
		b.RefreshHeld(ctx)
		band = 0
		if opt.StripHeight > 0 {
			band = opt.StripHeight
		}
	default:
		return nil, fmt.Errorf("%w: IW-SSIM on WebGPU: mode %v", zenmetrics.ErrUnsupported, opt.Mode)
	}
	if _, ok := (impl{}).Estimate(b, w, h, opt.Mode); !ok && opt.StripHeight <= 0 {
		return nil, fmt.Errorf("%w: IW-SSIM on WebGPU: a %d×%d image in mode %v exceeds the device's limits or memory", zenmetrics.ErrUnsupported, w, h, opt.Mode)
	}
	strips, rows, need, err := plan(b, w, h, band)
	if err != nil {
		return nil, err
	}
	if opt.Mode == zenmetrics.ModeFull {
		b.RefreshHeld(ctx)
	}
	if err := b.CheckBudget(need); err != nil {
		return nil, err
	}
	cref, err := cpuiw.PrepareContext(ctx, ref, cpuiw.Config{})
	if err != nil {
		return nil, err
	}
	r := &reference{dev: b.Device(), gm: newGeometry(w, h), strips: strips, rows: rows, cref: cref, data: cref.Scales()}
	r.flatAt = -1
	for k, d := range r.data {
		if d.SS != nil {
			r.nlam[k] = len(d.LamScaled)
		}
		if d.Flat && r.flatAt < 0 {
			r.flatAt = k
		}
	}
	err = r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		k, err := compile(g)
		if err != nil {
			return err
		}
		r.k = k
		if err := r.take(g, worstRaw(w, rows)); err != nil {
			return err
		}
		if len(strips) == 1 {
			r.window(g, strips[0]) // resident: uploaded once
		}
		return g.Encoder().SubmitAndWait()
	})
	if err != nil {
		r.dev.Free(r.own.Take())
		cref.Release()
		return nil, err
	}
	if len(strips) == 1 {
		// The whole image's planes are on the device: the CPU copy goes.
		r.cref.Release()
		r.cref, r.data = nil, nil
	}
	return r, nil
}
