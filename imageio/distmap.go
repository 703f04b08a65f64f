package imageio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/zenmetrics-go/zenmetrics"
)

// Distance maps: the raw float map as PFM and the colour heat map, both as
// libjxl v0.12.0's butteraugli_main writes them (--rawdistmap, --distmap).

// checkPlane validates a FloatPlane's header against its buffer.
func checkPlane(p *zenmetrics.FloatPlane) error {
	switch {
	case p == nil:
		return fmt.Errorf("%w: nil float plane", zenmetrics.ErrBadInput)
	case p.Width <= 0 || p.Height <= 0:
		return fmt.Errorf("%w: empty float plane %dx%d", zenmetrics.ErrBadInput, p.Width, p.Height)
	case int64(len(p.Pix)) < int64(p.Width)*int64(p.Height):
		return fmt.Errorf("%w: float plane of %d values too short for %dx%d",
			zenmetrics.ErrBadInput, len(p.Pix), p.Width, p.Height)
	}
	return nil
}

// WritePFM writes p as a grayscale Portable Float Map the way
// butteraugli_main --rawdistmap does: the header "Pf\n<width> <height>\n-1.0\n"
// (negative scale: little-endian samples), then the rows from the bottom row
// of the image to the top one, each Width little-endian float32 values. The
// byte order is fixed, whatever the machine's.
func WritePFM(w io.Writer, p *zenmetrics.FloatPlane) error {
	if err := checkPlane(p); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := fmt.Fprintf(bw, "Pf\n%d %d\n-1.0\n", p.Width, p.Height); err != nil {
		return err
	}
	row := make([]byte, 4*p.Width)
	for y := p.Height - 1; y >= 0; y-- {
		src := p.Pix[y*p.Width : (y+1)*p.Width]
		for x, v := range src {
			binary.LittleEndian.PutUint32(row[4*x:], math.Float32bits(v))
		}
		if _, err := bw.Write(row); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadPFM reads a grayscale Portable Float Map ("Pf") into a FloatPlane with
// the top row first: the file's rows run from the bottom of the image up, as
// the format (and WritePFM) has them. A negative scale means little-endian
// samples, a positive one big-endian; its magnitude is ignored. Colour PFM
// files ("PF") are refused with an error wrapping zenmetrics.ErrUnsupported;
// malformed, truncated or oversized (more than DefaultMaxPixels) files with
// one wrapping zenmetrics.ErrBadInput. Bytes after the last row are not read.
func ReadPFM(r io.Reader) (*zenmetrics.FloatPlane, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: pfm: "+format, append([]any{zenmetrics.ErrBadInput}, a...)...)
	}
	magic, err := pfmToken(br)
	if err != nil {
		return nil, bad("reading the header: %v", err)
	}
	switch magic {
	case "Pf":
	case "PF":
		return nil, fmt.Errorf("%w: pfm: colour (PF) file, a distance map is one channel (Pf)", zenmetrics.ErrUnsupported)
	default:
		return nil, bad("not a PFM file (starts with %q)", magic)
	}
	var dims [2]int
	for i, name := range []string{"width", "height"} {
		tok, err := pfmToken(br)
		if err != nil {
			return nil, bad("reading the %s: %v", name, err)
		}
		v, err := strconv.Atoi(tok)
		if err != nil || v <= 0 {
			return nil, bad("%s %q is not a positive integer", name, tok)
		}
		dims[i] = v
	}
	w, h := dims[0], dims[1]
	if int64(w)*int64(h) > DefaultMaxPixels {
		return nil, bad("%dx%d is more than %d pixels", w, h, int64(DefaultMaxPixels))
	}
	tok, err := pfmToken(br)
	if err != nil {
		return nil, bad("reading the scale: %v", err)
	}
	scale, err := strconv.ParseFloat(tok, 64)
	if err != nil || scale == 0 || math.IsNaN(scale) {
		return nil, bad("scale %q is not a non-zero number", tok)
	}
	// Exactly one whitespace byte separates the scale from the samples.
	if c, err := br.ReadByte(); err != nil {
		return nil, bad("no samples after the header: %v", err)
	} else if !isPFMSpace(c) {
		return nil, bad("no whitespace after the scale")
	}
	var order binary.ByteOrder = binary.LittleEndian
	if scale > 0 {
		order = binary.BigEndian
	}
	// Read what the file has before allocating the plane, so a lying header
	// cannot make us allocate more than the data that is really there.
	var raw bytes.Buffer
	want := int64(w) * int64(h) * 4
	n, err := io.Copy(&raw, io.LimitReader(br, want))
	if err != nil {
		return nil, bad("reading the samples: %v", err)
	}
	if n < want {
		return nil, bad("truncated: %d of %d sample bytes", n, want)
	}
	data := raw.Bytes()
	p := &zenmetrics.FloatPlane{Width: w, Height: h, Pix: make([]float32, w*h)}
	for fy := 0; fy < h; fy++ {
		src := data[fy*w*4 : (fy+1)*w*4]
		dst := p.Pix[(h-1-fy)*w : (h-fy)*w]
		for x := range dst {
			dst[x] = math.Float32frombits(order.Uint32(src[4*x:]))
		}
	}
	return p, nil
}

func isPFMSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// pfmToken skips whitespace and returns the next run of non-space bytes,
// leaving the byte that ended it unread. Tokens are short; a long one is an
// error rather than an unbounded read.
func pfmToken(br *bufio.Reader) (string, error) {
	var tok []byte
	for {
		c, err := br.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		if isPFMSpace(c) {
			if len(tok) == 0 {
				continue
			}
			return string(tok), br.UnreadByte()
		}
		if len(tok) >= 32 {
			return "", fmt.Errorf("header field %q... too long", tok)
		}
		tok = append(tok, c)
	}
}

// heatColors is butteraugli's heat map scale, evenly spaced: black, blue,
// cyan, green, yellow, red, magenta, three pastels and white, with white
// repeated so that the top of the scale is a solid range.
var heatColors = [12][3]float64{
	{0, 0, 0},
	{0, 0, 1},
	{0, 1, 1},
	{0, 1, 0},
	{1, 1, 0},
	{1, 0, 0},
	{1, 0, 1},
	{0.5, 0.5, 1},
	{1, 0.5, 0.5},
	{1, 1, 0.5},
	{1, 1, 1},
	{1, 1, 1},
}

// heatPosition maps a distance onto the colour scale (0: first colour, 1:
// one past the last) the way libjxl does: [0, good) fills the first 30%,
// [good, bad) the next 15%, and each 12×bad above bad another 50%, so the
// scale reaches solid white at about 12×bad. The float64 conversions keep
// the compiler from fusing multiply-adds (arm64), as the reference build
// (plain x86-64 code here) does not fuse them either.
func heatPosition(d, good, bad float64) float64 {
	switch {
	case d < good:
		return d / good * 0.3
	case d < bad:
		return 0.3 + float64((d-good)/(bad-good)*0.15)
	}
	return 0.45 + float64((d-bad)/(bad*12)*0.5)
}

// heatRGB returns the float colour (gamma-encoded with a square root, as
// libjxl does) of distance d. NaN distances come out black.
func heatRGB(d, good, bad float64) [3]float32 {
	const last = float64(len(heatColors) - 1)
	s := heatPosition(d, good, bad) * last
	if math.IsNaN(s) {
		return [3]float32{}
	}
	s = math.Min(math.Max(s, 0), last-1)
	ix := int(s)
	mix := s - float64(ix)
	var rgb [3]float32
	for c := range rgb {
		// No fused multiply-adds, as in heatPosition.
		v := float64(mix*heatColors[ix+1][c]) + float64((1-mix)*heatColors[ix][c])
		rgb[c] = float32(math.Sqrt(v))
	}
	return rgb
}

// to8 converts a [0, 1] float sample to 8 bits as libjxl's PNG path does:
// clamp (NaN to 0), multiply by 255 in float32, round half to even.
func to8(v float32) byte {
	if !(v > 0) {
		return 0
	}
	if v > 1 {
		v = 1
	}
	return byte(math.RoundToEven(float64(v * 255)))
}

// HeatMap colours a distance map like libjxl's CreateHeatMapImage, the
// image butteraugli_main --distmap writes: distances below good run from
// black through blue and cyan towards green, good to bad from green
// through yellow towards red, above bad through magenta and pastels to
// white. butteraugli_main passes ButteraugliHeatMapThresholds(). The float
// colours are converted to 8 bits as libjxl writes its PNG (clamped, ×255,
// rounded to nearest even). The result is a tightly packed RGB8 image of
// the plane's size, top row first; nil when p is nil or inconsistent (empty,
// or Pix shorter than Width×Height).
func HeatMap(p *zenmetrics.FloatPlane, good, bad float64) *zenmetrics.Image {
	if checkPlane(p) != nil {
		return nil
	}
	im := zenmetrics.NewImage(p.Width, p.Height, zenmetrics.RGB8)
	for y := 0; y < p.Height; y++ {
		src := p.Pix[y*p.Width : (y+1)*p.Width]
		dst := im.Row(y)
		for x, d := range src {
			rgb := heatRGB(float64(d), good, bad)
			dst[3*x] = to8(rgb[0])
			dst[3*x+1] = to8(rgb[1])
			dst[3*x+2] = to8(rgb[2])
		}
	}
	return im
}

// fuzzyClass is butteraugli's soft classification of a distance: 2 at 0,
// falling through 1 at distance 1 towards 0, on two logistic curves.
func fuzzyClass(score float64) float64 {
	const (
		width  = 4.8
		m0     = 2.0
		scaler = 0.7777
	)
	v := m0 / (1 + math.Exp((score-1)*width))
	if score < 1 {
		return float64((v-1)*(2-scaler)) + scaler // unfused, as in heatPosition
	}
	return v * scaler
}

// fuzzyInverse finds the distance whose fuzzyClass is seek, by the same
// fixed bisection libjxl uses (steps halving from 1 down to 1e-10,
// starting at 0), so the result carries the same rounding.
func fuzzyInverse(seek float64) float64 {
	pos := 0.0
	for step := 1.0; step >= 1e-10; step *= 0.5 {
		if fuzzyClass(pos) < seek {
			pos -= step
		} else {
			pos += step
		}
	}
	return pos
}

// ButteraugliHeatMapThresholds returns the good and bad thresholds
// butteraugli_main gives its heat map: the distances at which butteraugli's
// fuzzy class is 1.5 and 0.5 (about 0.717 and 1.156), rounded to float32 as
// the tool stores them.
func ButteraugliHeatMapThresholds() (good, bad float64) {
	return float64(float32(fuzzyInverse(1.5))), float64(float32(fuzzyInverse(0.5)))
}
