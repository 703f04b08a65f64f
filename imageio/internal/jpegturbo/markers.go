package jpegturbo

import (
	"encoding/binary"
	"io"
)

// Marker codes (T.81 Table B.1).
const (
	mSOF0  = 0xc0
	mSOF1  = 0xc1
	mSOF2  = 0xc2
	mDHT   = 0xc4
	mSOF9  = 0xc9
	mSOF10 = 0xca
	mDAC   = 0xcc
	mRST0  = 0xd0
	mRST7  = 0xd7
	mSOI   = 0xd8
	mEOI   = 0xd9
	mSOS   = 0xda
	mDQT   = 0xdb
	mDNL   = 0xdc
	mDRI   = 0xdd
	mAPP0  = 0xe0
	mAPP1  = 0xe1
	mAPP2  = 0xe2
	mAPP14 = 0xee
	mCOM   = 0xfe
	mTEM   = 0x01
)

// maxDimension is libjpeg's JPEG_MAX_DIMENSION.
const maxDimension = 65500

// component is one frame component and everything decoded for it.
type component struct {
	id, h, v, tq int
	// bw, bh: blocks holding image data (libjpeg's width_in_blocks,
	// height_in_blocks); bwPad, bhPad: blocks including the MCU padding
	// (the coefficient and sample buffers are this large).
	bw, bh, bwPad, bhPad int
	// dsW, dsH: downsampled size in samples.
	dsW, dsH int
	// qt is the quantisation table in natural order, latched when the
	// component's first scan starts (as libjpeg's latch_quant_tables).
	qt       [64]int32
	qLatched bool
	// coefs holds bwPad*bhPad blocks of 64 coefficients (natural order)
	// for multi-scan files; nil for single-scan files.
	coefs []int16
	// plane holds the IDCT output, bwPad*8 samples wide.
	plane []byte
	// coefBits is libjpeg's coef_bits (progressive files): -1 while a
	// coefficient has had no scan, else the Al of the last scan that
	// coded it.
	coefBits [64]int
	// Per-scan entropy state.
	dcTbl, acTbl int
	lastDC       int32
	dcContext    int
}

// decoder holds the parsing state of one Decode call.
type decoder struct {
	data []byte
	pos  int // next byte of data to read between segments
	cfg  Config

	comps      []component
	maxH, maxV int
	// mcusX, mcusY: MCUs of an interleaved scan per row and per column
	// (mcusY is libjpeg's total_iMCU_rows).
	mcusX, mcusY int

	qt              [4]*[64]uint16 // natural order
	dcHuff, acHuff  [4]*huffTable
	arithL, arithU  [16]int
	arithK          [16]int
	restartInterval int

	sawSOF, sawSOS bool
	adobeTransform int
	sawAdobe       bool
	sawJFIF        bool
	scans          int
	multiScan      bool
	eoi            bool

	iccChunks   [][]byte
	orientation int
	exifSeen    bool
}

// nextMarker finds the next marker from d.pos, skipping anything that is
// not one (libjpeg's next_marker: extraneous bytes and fill 0xFF bytes are
// passed over). It returns the marker code and leaves d.pos after it.
func (d *decoder) nextMarker() (int, error) {
	for {
		for d.pos < len(d.data) && d.data[d.pos] != 0xff {
			d.pos++
		}
		for d.pos < len(d.data) && d.data[d.pos] == 0xff {
			d.pos++
		}
		if d.pos >= len(d.data) {
			return 0, errBad("%v", errTruncated)
		}
		c := int(d.data[d.pos])
		d.pos++
		if c != 0 {
			return c, nil
		}
	}
}

// segment returns the payload of a marker segment starting at d.pos (the
// length field) and moves past it.
func (d *decoder) segment(marker int) ([]byte, error) {
	if d.pos+2 > len(d.data) {
		return nil, errBad("%v in the length of marker 0x%02x", errTruncated, marker)
	}
	n := int(binary.BigEndian.Uint16(d.data[d.pos:]))
	if n < 2 {
		return nil, errBad("bogus length %d of marker 0x%02x", n, marker)
	}
	if d.pos+n > len(d.data) {
		return nil, errBad("%v inside marker 0x%02x", errTruncated, marker)
	}
	p := d.data[d.pos+2 : d.pos+n]
	d.pos += n
	return p, nil
}

// readHeaders reads SOI and every marker up to the first SOS, whose
// payload it leaves unread (d.pos at its length field).
func (d *decoder) readHeaders() error {
	if len(d.data) < 2 || d.data[0] != 0xff || d.data[1] != mSOI {
		return errBad("not a JPEG file (no SOI marker)")
	}
	d.pos = 2
	d.adobeTransform = -1
	for i := range d.arithU {
		d.arithL[i], d.arithU[i], d.arithK[i] = 0, 1, 5
	}
	for {
		m, err := d.nextMarker()
		if err != nil {
			return err
		}
		if m == mSOS {
			if !d.sawSOF {
				return errBad("SOS before SOF")
			}
			break
		}
		if m == mEOI {
			return errBad("no image (EOI before the first scan)")
		}
		if err := d.tableMarker(m); err != nil {
			return err
		}
	}
	return d.defaultColor()
}

// tableMarker handles any marker other than SOS and EOI.
func (d *decoder) tableMarker(m int) error {
	switch {
	case m == mSOI:
		return errBad("duplicate SOI marker")
	case m == mSOF0 || m == mSOF1 || m == mSOF2 || m == mSOF9 || m == mSOF10:
		p, err := d.segment(m)
		if err != nil {
			return err
		}
		return d.parseSOF(m, p)
	case m >= 0xc0 && m <= 0xcf && m != mDHT && m != mDAC:
		// SOF3 (lossless), SOF5-7 and SOF13-15 (hierarchical), SOF11
		// (arithmetic lossless), JPG: libjpeg-turbo 2.1 refuses them too.
		return errUnsupported("SOF marker 0x%02x (lossless, hierarchical or reserved coding) is not supported", m)
	case m == mDHT:
		p, err := d.segment(m)
		if err != nil {
			return err
		}
		return d.parseDHT(p)
	case m == mDQT:
		p, err := d.segment(m)
		if err != nil {
			return err
		}
		return d.parseDQT(p)
	case m == mDAC:
		p, err := d.segment(m)
		if err != nil {
			return err
		}
		return d.parseDAC(p)
	case m == mDRI:
		p, err := d.segment(m)
		if err != nil {
			return err
		}
		if len(p) != 2 {
			return errBad("DRI marker of length %d", len(p)+2)
		}
		d.restartInterval = int(binary.BigEndian.Uint16(p))
		return nil
	case m >= mAPP0 && m <= mAPP0+15, m == mCOM, m == mDNL:
		p, err := d.segment(m)
		if err != nil {
			return err
		}
		d.parseAPP(m, p)
		return nil
	case m >= mRST0 && m <= mRST7, m == mTEM:
		return nil // parameterless; libjpeg ignores a stray one
	}
	return errBad("unknown marker 0x%02x", m)
}

func (d *decoder) parseSOF(m int, p []byte) error {
	if d.sawSOF {
		return errBad("duplicate SOF marker")
	}
	d.sawSOF = true
	if len(p) < 6 {
		return errBad("SOF marker too short")
	}
	prec := int(p[0])
	h := int(binary.BigEndian.Uint16(p[1:]))
	w := int(binary.BigEndian.Uint16(p[3:]))
	nc := int(p[5])
	if h == 0 || w == 0 || nc == 0 {
		return errBad("empty image %dx%d with %d components (DNL-defined heights are not supported)", w, h, nc)
	}
	if len(p) != 6+3*nc {
		return errBad("SOF marker length does not match its %d components", nc)
	}
	if prec != 8 {
		return errUnsupported("%d-bit samples are not supported (8-bit only, like libjpeg-turbo's default build)", prec)
	}
	if w > maxDimension || h > maxDimension {
		return errBad("image %dx%d is larger than %d pixels on a side", w, h, maxDimension)
	}
	if nc > 10 {
		return errBad("%d components (at most 10)", nc)
	}
	d.cfg.Width, d.cfg.Height, d.cfg.Components = w, h, nc
	d.cfg.Progressive = m == mSOF2 || m == mSOF10
	d.cfg.Arithmetic = m == mSOF9 || m == mSOF10
	d.comps = make([]component, nc)
	d.maxH, d.maxV = 1, 1
	for i := range d.comps {
		c := &d.comps[i]
		q := p[6+3*i:]
		c.id = int(q[0])
		c.h, c.v = int(q[1]>>4), int(q[1]&15)
		c.tq = int(q[2])
		if c.h < 1 || c.h > 4 || c.v < 1 || c.v > 4 {
			return errBad("bad sampling factors %dx%d", c.h, c.v)
		}
		d.maxH, d.maxV = max(d.maxH, c.h), max(d.maxV, c.v)
		for k := range c.coefBits {
			c.coefBits[k] = -1
		}
	}
	d.mcusX = ceilDiv(w, d.maxH*8)
	d.mcusY = ceilDiv(h, d.maxV*8)
	for i := range d.comps {
		c := &d.comps[i]
		c.dsW = ceilDiv(w*c.h, d.maxH)
		c.dsH = ceilDiv(h*c.v, d.maxV)
		c.bw = ceilDiv(w*c.h, d.maxH*8)
		c.bh = ceilDiv(h*c.v, d.maxV*8)
		c.bwPad = d.mcusX * c.h
		c.bhPad = d.mcusY * c.v
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func (d *decoder) parseDHT(p []byte) error {
	for len(p) > 16 {
		index := int(p[0])
		var counts [17]int
		total := 0
		for i := 1; i <= 16; i++ {
			counts[i] = int(p[i])
			total += counts[i]
		}
		p = p[17:]
		if total > 256 || total > len(p) {
			return errBad("bad Huffman table")
		}
		vals := p[:total]
		p = p[total:]
		ac := index&0x10 != 0
		index &^= 0x10
		if index >= 4 {
			return errBad("bad Huffman table index 0x%02x", index)
		}
		t := &huffTable{counts: counts, symbols: append([]byte(nil), vals...)}
		if ac {
			d.acHuff[index] = t
		} else {
			d.dcHuff[index] = t
		}
	}
	if len(p) != 0 {
		return errBad("bad DHT marker length")
	}
	return nil
}

func (d *decoder) parseDQT(p []byte) error {
	for len(p) > 0 {
		n := int(p[0])
		p = p[1:]
		prec16 := n>>4 != 0
		n &= 15
		if n >= 4 {
			return errBad("bad quantization table index %d", n)
		}
		t := new([64]uint16)
		count := 64
		if prec16 {
			if len(p) < 128 {
				// libjpeg accepts a short table and fills the rest with 1.
				for i := range t {
					t[i] = 1
				}
				count = len(p) >> 1
			}
		} else if len(p) < 64 {
			for i := range t {
				t[i] = 1
			}
			count = len(p)
		}
		for i := 0; i < count; i++ {
			if prec16 {
				t[naturalOrder[i]] = binary.BigEndian.Uint16(p[2*i:])
			} else {
				t[naturalOrder[i]] = uint16(p[i])
			}
		}
		if prec16 {
			p = p[2*count:]
		} else {
			p = p[count:]
		}
		d.qt[n] = t
	}
	return nil
}

func (d *decoder) parseDAC(p []byte) error {
	if len(p)%2 != 0 {
		return errBad("bad DAC marker length")
	}
	for ; len(p) >= 2; p = p[2:] {
		index, val := int(p[0]), int(p[1])
		if index >= 32 {
			return errBad("bad DAC table index %d", index)
		}
		if index >= 16 {
			d.arithK[index-16] = val
			continue
		}
		d.arithL[index], d.arithU[index] = val&15, val>>4
		if d.arithL[index] > d.arithU[index] {
			return errBad("bad DAC value 0x%02x", val)
		}
	}
	return nil
}

// parseAPP notes the JFIF, Adobe, ICC and EXIF segments.
func (d *decoder) parseAPP(m int, p []byte) {
	switch m {
	case mAPP0:
		// libjpeg's examine_app0 wants at least 14 bytes after the length.
		if len(p) >= 14 && string(p[:5]) == "JFIF\x00" {
			d.sawJFIF = true
		}
	case mAPP14:
		if len(p) >= 12 && string(p[:5]) == "Adobe" {
			d.sawAdobe = true
			d.adobeTransform = int(p[11])
		}
	case mAPP2:
		// libjxl's MarkerIsICC: signature plus the two counters.
		if len(p) >= 14 && string(p[:12]) == "ICC_PROFILE\x00" {
			d.iccChunks = append(d.iccChunks, p)
		}
	case mAPP1:
		if !d.exifSeen && len(p) >= 8 && string(p[:6]) == "Exif\x00\x00" {
			d.exifSeen = true // libjxl keeps the first Exif segment only
			d.orientation = exifOrientation(p[6:])
		}
	}
}

// defaultColor chooses the colour spaces as libjpeg-turbo's
// default_decompress_parms (jdapimin.c) does.
func (d *decoder) defaultColor() error {
	d.cfg.AdobeTransform = d.adobeTransform
	d.cfg.JFIF = d.sawJFIF
	switch len(d.comps) {
	case 1:
		d.cfg.JPEGColor, d.cfg.ColorSpace = "gray", Gray
	case 3:
		d.cfg.ColorSpace = RGB
		d.cfg.JPEGColor = "YCbCr"
		switch {
		case d.sawJFIF:
		case d.sawAdobe:
			if d.adobeTransform == 0 {
				d.cfg.JPEGColor = "RGB"
			}
		default:
			if d.comps[0].id == 'R' && d.comps[1].id == 'G' && d.comps[2].id == 'B' {
				d.cfg.JPEGColor = "RGB"
			}
		}
	case 4:
		d.cfg.ColorSpace = CMYK
		d.cfg.JPEGColor = "CMYK"
		if d.sawAdobe && d.adobeTransform != 0 {
			d.cfg.JPEGColor = "YCCK" // transform 2, and libjpeg's guess for others
		}
	default:
		return errUnsupported("%d-component JPEG (colour space unknown to libjpeg)", len(d.comps))
	}
	_, err := d.upsamplers()
	return err
}

// icc assembles the ICC profile as libjxl's ReadICCProfile does
// (lib/extras/dec/jpg.cc, v0.12): chunks numbered 1..n, all present, none
// duplicated or empty; anything inconsistent means "no profile".
func (d *decoder) icc() []byte {
	if len(d.iccChunks) == 0 {
		return nil
	}
	n := int(d.iccChunks[0][13])
	if n == 0 {
		return nil
	}
	parts := make([][]byte, n+1)
	for _, c := range d.iccChunks {
		seq, cnt := int(c[12]), int(c[13])
		if seq == 0 || seq > cnt || cnt != n || len(c) == 14 || parts[seq] != nil {
			return nil
		}
		parts[seq] = c[14:]
	}
	var out []byte
	for _, p := range parts[1:] {
		if p == nil {
			return nil
		}
		out = append(out, p...)
	}
	return out
}

// exifOrientation reads tag 0x0112 of IFD0 from a TIFF-structured EXIF
// block; 0 when absent or malformed.
func exifOrientation(t []byte) int {
	if len(t) < 8 {
		return 0
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 0
	}
	off := int(bo.Uint32(t[4:]))
	if off < 8 || off+2 > len(t) {
		return 0
	}
	n := int(bo.Uint16(t[off:]))
	for i := 0; i < n; i++ {
		e := off + 2 + 12*i
		if e+12 > len(t) {
			return 0
		}
		if bo.Uint16(t[e:]) == 0x0112 && bo.Uint16(t[e+2:]) == 3 {
			v := int(bo.Uint16(t[e+8:]))
			if v >= 1 && v <= 8 {
				return v
			}
			return 0
		}
	}
	return 0
}

// ConfigAt is DecodeConfig for a file that is not in memory: it walks the
// marker segments up to the first SOS with small reads, reading only the
// segments that decide the configuration (SOF, JFIF APP0, Adobe APP14) and
// skipping the others by their length. Unlike DecodeConfig it does not
// parse the tables (DHT, DQT, DAC); Decode reports errors in those.
func ConfigAt(r io.ReaderAt, size int64) (Config, error) {
	ra := &atReader{r: r, size: size}
	d := &decoder{adobeTransform: -1}
	b0, e0 := ra.byteAt(0)
	b1, e1 := ra.byteAt(1)
	if e0 != nil || e1 != nil || b0 != 0xff || b1 != mSOI {
		return Config{}, errBad("not a JPEG file (no SOI marker)")
	}
	pos := int64(2)
	for {
		// Find the next marker as nextMarker does.
		var m int
		for {
			c, err := ra.byteAt(pos)
			if err != nil {
				return Config{}, errBad("%v before the first scan", errTruncated)
			}
			pos++
			if c != 0xff {
				continue
			}
			for c == 0xff {
				if c, err = ra.byteAt(pos); err != nil {
					return Config{}, errBad("%v before the first scan", errTruncated)
				}
				pos++
			}
			if c != 0 {
				m = int(c)
				break
			}
		}
		switch {
		case m == mSOS:
			if !d.sawSOF {
				return Config{}, errBad("SOS before SOF")
			}
			if err := d.defaultColor(); err != nil {
				return Config{}, err
			}
			return d.cfg, nil
		case m == mEOI:
			return Config{}, errBad("no image (EOI before the first scan)")
		case m >= mRST0 && m <= mRST7, m == mTEM:
			continue
		}
		hdr, err := ra.slice(pos, 2)
		if err != nil {
			return Config{}, errBad("%v in the length of marker 0x%02x", errTruncated, m)
		}
		n := int64(binary.BigEndian.Uint16(hdr))
		if n < 2 || pos+n > size {
			return Config{}, errBad("bad or truncated marker 0x%02x of length %d", m, n)
		}
		want := int64(0)
		switch {
		case m == mSOF0 || m == mSOF1 || m == mSOF2 || m == mSOF9 || m == mSOF10:
			want = n - 2
		case m == mAPP0:
			want = min(n-2, 14)
		case m == mAPP14:
			want = min(n-2, 12)
		case m >= 0xc0 && m <= 0xcf && m != mDHT && m != mDAC:
			return Config{}, errUnsupported("SOF marker 0x%02x (lossless, hierarchical or reserved coding) is not supported", m)
		case m == mSOI:
			return Config{}, errBad("duplicate SOI marker")
		case m == mDHT, m == mDQT, m == mDAC, m == mDRI, m == mDNL, m == mCOM, m >= mAPP0 && m <= mAPP0+15:
		default:
			return Config{}, errBad("unknown marker 0x%02x", m)
		}
		if want > 0 {
			p, err := ra.slice(pos+2, want)
			if err != nil {
				return Config{}, errBad("%v inside marker 0x%02x", errTruncated, m)
			}
			p = append([]byte(nil), p...)
			if m == mAPP0 || m == mAPP14 {
				d.parseAPP(m, p)
			} else if err := d.parseSOF(m, p); err != nil {
				return Config{}, err
			}
		}
		pos += n
	}
}

// atReader reads an io.ReaderAt through a small window.
type atReader struct {
	r    io.ReaderAt
	size int64
	buf  []byte
	off  int64
}

func (a *atReader) slice(pos, n int64) ([]byte, error) {
	if pos < 0 || n < 0 || pos+n > a.size {
		return nil, io.ErrUnexpectedEOF
	}
	if pos < a.off || pos+n > a.off+int64(len(a.buf)) {
		l := min(max(n, 4096), a.size-pos)
		if int64(cap(a.buf)) < l {
			a.buf = make([]byte, l)
		}
		a.buf = a.buf[:l]
		if k, err := a.r.ReadAt(a.buf, pos); int64(k) < l {
			a.buf = a.buf[:0]
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		a.off = pos
	}
	return a.buf[pos-a.off : pos-a.off+n], nil
}

func (a *atReader) byteAt(pos int64) (byte, error) {
	p, err := a.slice(pos, 1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}
