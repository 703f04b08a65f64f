package jpegturbo

import (
	"runtime"
	"sync"
)

// Upsampling methods, chosen per component as libjpeg-turbo 2.1's
// jinit_upsampler (jdsample.c) chooses them with do_fancy_upsampling on and
// no DCT scaling.
const (
	upFull      = iota // same size as the output
	upH2V1Fancy        // 2:1 horizontally, triangular filter
	upH1V2Fancy        // 1:2 vertically, triangular filter (libjpeg-turbo ≥ 2.0)
	upH2V2Fancy        // 2:1 both ways, triangular filter
	upInt              // integral factors by replication
)

type upsampler struct {
	method int
	hx, vx int // replication factors (upInt)
}

// upsamplers picks the methods, or refuses what libjpeg refuses
// (JERR_FRACT_SAMPLE_NOTIMPL).
func (d *decoder) upsamplers() ([]upsampler, error) {
	us := make([]upsampler, len(d.comps))
	for i := range d.comps {
		c := &d.comps[i]
		hi, vi, ho, vo := c.h, c.v, d.maxH, d.maxV
		switch {
		case hi == ho && vi == vo:
			us[i] = upsampler{method: upFull}
		case hi*2 == ho && vi == vo:
			if c.dsW > 2 {
				us[i] = upsampler{method: upH2V1Fancy}
			} else {
				us[i] = upsampler{method: upInt, hx: 2, vx: 1}
			}
		case hi == ho && vi*2 == vo:
			us[i] = upsampler{method: upH1V2Fancy}
		case hi*2 == ho && vi*2 == vo:
			if c.dsW > 2 {
				us[i] = upsampler{method: upH2V2Fancy}
			} else {
				us[i] = upsampler{method: upInt, hx: 2, vx: 2}
			}
		case ho%hi == 0 && vo%vi == 0:
			us[i] = upsampler{method: upInt, hx: ho / hi, vx: vo / vi}
		default:
			return nil, errUnsupported("fractional sampling factors %dx%d in a %dx%d frame are not supported (libjpeg neither)",
				hi, vi, ho, vo)
		}
	}
	return us, nil
}

// upRow writes output row y of component c, upsampled to at least width w,
// into buf and returns the row (which may alias the component plane).
func upRow(c *component, u upsampler, y, w int, buf []byte) []byte {
	stride := c.bwPad * 8
	row := func(r int) []byte {
		r = min(max(r, 0), c.dsH-1)
		return c.plane[r*stride : r*stride+stride]
	}
	switch u.method {
	case upFull:
		return row(y)[:w]
	case upH2V1Fancy:
		in := row(y)
		n := c.dsW
		buf[0] = in[0]
		buf[1] = byte((int(in[0])*3 + int(in[1]) + 2) >> 2)
		for i := 1; i < n-1; i++ {
			v := int(in[i]) * 3
			buf[2*i] = byte((v + int(in[i-1]) + 1) >> 2)
			buf[2*i+1] = byte((v + int(in[i+1]) + 2) >> 2)
		}
		buf[2*n-2] = byte((int(in[n-1])*3 + int(in[n-2]) + 1) >> 2)
		buf[2*n-1] = in[n-1]
		return buf[:w]
	case upH1V2Fancy:
		near := row(y >> 1)
		var far []byte
		bias := 1
		if y&1 == 0 {
			far = row(y>>1 - 1)
		} else {
			far = row(y>>1 + 1)
			bias = 2
		}
		for i := 0; i < w; i++ {
			buf[i] = byte((int(near[i])*3 + int(far[i]) + bias) >> 2)
		}
		return buf[:w]
	case upH2V2Fancy:
		near := row(y >> 1)
		var far []byte
		if y&1 == 0 {
			far = row(y>>1 - 1)
		} else {
			far = row(y>>1 + 1)
		}
		n := c.dsW
		near, far = near[:n], far[:n]
		out := buf[:2*n]
		this := int(near[0])*3 + int(far[0])
		next := int(near[1])*3 + int(far[1])
		out[0] = byte((this*4 + 8) >> 4)
		out[1] = byte((this*3 + next + 7) >> 4)
		last := this
		this = next
		for i := 1; i < n-1; i++ {
			next = int(near[i+1])*3 + int(far[i+1])
			o := out[2*i : 2*i+2 : 2*i+2]
			o[0] = byte((this*3 + last + 8) >> 4)
			o[1] = byte((this*3 + next + 7) >> 4)
			last, this = this, next
		}
		out[2*n-2] = byte((this*3 + last + 8) >> 4)
		out[2*n-1] = byte((this*4 + 7) >> 4)
		return buf[:w]
	}
	in := row(y / u.vx)
	if u.hx == 1 {
		return in[:w]
	}
	for i := 0; i < w; i++ {
		buf[i] = in[i/u.hx]
	}
	return buf[:w]
}

// YCbCr→RGB tables of jdcolor.c build_ycc_rgb_table: 16-bit fixed point,
// FIX(x) = round(x·2^16); constants 1.40200, 1.77200, 0.71414, 0.34414
// (libjpeg-turbo 2.1.5.1, IJG licence).
var crR, cbB [256]int32
var crG, cbG [256]int32

func init() {
	const half = 1 << 15
	fix := func(x float64) int64 { return int64(x*(1<<16) + 0.5) }
	for i := 0; i < 256; i++ {
		x := int64(i - 128)
		crR[i] = int32((fix(1.40200)*x + half) >> 16)
		cbB[i] = int32((fix(1.77200)*x + half) >> 16)
		crG[i] = int32(-fix(0.71414) * x)
		cbG[i] = int32(-fix(0.34414)*x + half)
	}
}

func clamp255(x int32) byte {
	if uint32(x) > 255 {
		if x < 0 {
			return 0
		}
		return 255
	}
	return byte(x)
}

// idctAll runs the IDCT of every component of a multi-scan file.
func (d *decoder) idctAll() {
	smooth := d.smoothingOK()
	var wg sync.WaitGroup
	for i := range d.comps {
		c := &d.comps[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if smooth {
				d.idctSmoothed(c)
				return
			}
			stride := c.bwPad * 8
			for by := 0; by < c.bh; by++ {
				for bx := 0; bx < c.bw; bx++ {
					blk := (*[64]int16)(c.coefs[(by*c.bwPad+bx)*64:])
					idctBlock(blk, &c.qt, c.plane[by*8*stride+bx*8:], stride)
				}
			}
		}()
	}
	wg.Wait()
}

// output produces the interleaved samples.
func (d *decoder) output() ([]byte, error) {
	if !d.eoi {
		return nil, errBad("%v", errTruncated)
	}
	us, err := d.upsamplers()
	if err != nil {
		return nil, err
	}
	if d.multiScan {
		d.idctAll()
	}
	w, h := d.cfg.Width, d.cfg.Height
	nc := d.cfg.ColorSpace.Channels()
	out := make([]byte, w*h*nc)
	// Rows are independent once the planes exist: split them over the
	// CPUs in bands.
	workers := min(runtime.GOMAXPROCS(0), max(1, h/64))
	var wg sync.WaitGroup
	for t := 0; t < workers; t++ {
		y0, y1 := h*t/workers, h*(t+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.convertRows(us, y0, y1, out)
		}()
	}
	wg.Wait()
	return out, nil
}

func (d *decoder) convertRows(us []upsampler, y0, y1 int, out []byte) {
	w := d.cfg.Width
	nc := d.cfg.ColorSpace.Channels()
	bufs := make([][]byte, len(d.comps))
	rows := make([][]byte, len(d.comps))
	for i := range bufs {
		bufs[i] = make([]byte, d.comps[i].bwPad*8*d.maxH+16)
	}
	for y := y0; y < y1; y++ {
		for i := range d.comps {
			rows[i] = upRow(&d.comps[i], us[i], y, w, bufs[i])
		}
		o := out[y*w*nc : (y+1)*w*nc]
		switch d.cfg.JPEGColor {
		case "gray":
			copy(o, rows[0])
		case "RGB":
			r, g, b := rows[0][:w], rows[1][:w], rows[2][:w]
			for x := 0; x < w; x++ {
				o[3*x], o[3*x+1], o[3*x+2] = r[x], g[x], b[x]
			}
		case "YCbCr":
			yy, cb, cr := rows[0][:w], rows[1][:w], rows[2][:w]
			for x, yv := range yy {
				Y := int32(yv)
				u, v := cb[x], cr[x]
				p := o[3*x : 3*x+3 : 3*x+3]
				p[0] = clamp255(Y + crR[v])
				p[1] = clamp255(Y + (cbG[u]+crG[v])>>16)
				p[2] = clamp255(Y + cbB[u])
			}
		case "CMYK":
			c, m, ye, k := rows[0][:w], rows[1][:w], rows[2][:w], rows[3][:w]
			for x := 0; x < w; x++ {
				o[4*x], o[4*x+1], o[4*x+2], o[4*x+3] = c[x], m[x], ye[x], k[x]
			}
		case "YCCK":
			yy, cb, cr, k := rows[0][:w], rows[1][:w], rows[2][:w], rows[3][:w]
			for x := 0; x < w; x++ {
				Y := int32(yy[x])
				u, v := cb[x], cr[x]
				o[4*x] = clamp255(255 - (Y + crR[v]))
				o[4*x+1] = clamp255(255 - (Y + (cbG[u]+crG[v])>>16))
				o[4*x+2] = clamp255(255 - (Y + cbB[u]))
				o[4*x+3] = k[x]
			}
		}
	}
}
