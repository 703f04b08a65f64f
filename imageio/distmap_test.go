package imageio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

func testPlane(w, h int) *zenmetrics.FloatPlane {
	p := &zenmetrics.FloatPlane{Width: w, Height: h, Pix: make([]float32, w*h)}
	for i := range p.Pix {
		p.Pix[i] = float32(i) + 0.25
	}
	return p
}

func TestWritePFMLayout(t *testing.T) {
	p := testPlane(3, 2) // rows: 0.25 1.25 2.25 / 3.25 4.25 5.25
	var b bytes.Buffer
	if err := WritePFM(&b, p); err != nil {
		t.Fatal(err)
	}
	const hdr = "Pf\n3 2\n-1.0\n"
	got := b.Bytes()
	if !bytes.HasPrefix(got, []byte(hdr)) {
		t.Fatalf("header %q, want %q", got[:min(len(got), len(hdr))], hdr)
	}
	data := got[len(hdr):]
	if len(data) != 3*2*4 {
		t.Fatalf("%d sample bytes, want 24", len(data))
	}
	// The bottom row of the image comes first, little-endian.
	want := []float32{3.25, 4.25, 5.25, 0.25, 1.25, 2.25}
	for i, v := range want {
		if g := math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])); g != v {
			t.Errorf("sample %d in file order = %v, want %v", i, g, v)
		}
	}
}

func TestPFMRoundTrip(t *testing.T) {
	p := testPlane(7, 5)
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, math.MaxFloat32, 1e-20}
	copy(p.Pix, special)
	var b bytes.Buffer
	if err := WritePFM(&b, p); err != nil {
		t.Fatal(err)
	}
	q, err := ReadPFM(&b)
	if err != nil {
		t.Fatal(err)
	}
	if q.Width != p.Width || q.Height != p.Height || len(q.Pix) != len(p.Pix) {
		t.Fatalf("got %dx%d (%d values)", q.Width, q.Height, len(q.Pix))
	}
	for i := range p.Pix {
		if math.Float32bits(q.Pix[i]) != math.Float32bits(p.Pix[i]) {
			t.Fatalf("value %d: %v, want %v", i, q.Pix[i], p.Pix[i])
		}
	}
}

func TestWritePFMLongerPix(t *testing.T) {
	// Extra values past Width×Height are not written.
	p := testPlane(2, 2)
	p.Pix = append(p.Pix, 99)
	var b bytes.Buffer
	if err := WritePFM(&b, p); err != nil {
		t.Fatal(err)
	}
	if n := b.Len() - len("Pf\n2 2\n-1.0\n"); n != 16 {
		t.Fatalf("%d sample bytes", n)
	}
}

func TestReadPFMVariants(t *testing.T) {
	be := func(vs ...float32) string {
		var b []byte
		for _, v := range vs {
			b = binary.BigEndian.AppendUint32(b, math.Float32bits(v))
		}
		return string(b)
	}
	le := func(vs ...float32) string {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return string(b)
	}
	cases := []struct {
		name, file string
		want       []float32 // top row first
	}{
		{"big-endian, spaces", "Pf 2 2 1.0\n" + be(1, 2, 3, 4), []float32{3, 4, 1, 2}},
		{"little-endian, scale magnitude ignored", "Pf\n2\n1\n-3.5\n" + le(5, 6), []float32{5, 6}},
		{"CRLF and extra blanks", "Pf\r\n  1 2\r\n-1.0\n" + le(7, 8), []float32{8, 7}},
		{"trailing bytes ignored", "Pf\n1 1\n-1\n" + le(9) + "junk", []float32{9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ReadPFM(strings.NewReader(c.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Pix) != len(c.want) || p.Width*p.Height != len(c.want) {
				t.Fatalf("%dx%d %v", p.Width, p.Height, p.Pix)
			}
			for i := range c.want {
				if p.Pix[i] != c.want[i] {
					t.Fatalf("pix %v, want %v", p.Pix, c.want)
				}
			}
		})
	}
}

func TestReadPFMErrors(t *testing.T) {
	cases := []struct {
		name, file string
		want       error
	}{
		{"empty", "", zenmetrics.ErrBadInput},
		{"colour", "PF\n1 1\n-1.0\n" + strings.Repeat("\x00", 12), zenmetrics.ErrUnsupported},
		{"not pfm", "P6\n1 1\n255\n\x00\x00\x00", zenmetrics.ErrBadInput},
		{"png", string(magicPNG), zenmetrics.ErrBadInput},
		{"zero width", "Pf\n0 1\n-1.0\n", zenmetrics.ErrBadInput},
		{"negative height", "Pf\n1 -1\n-1.0\n", zenmetrics.ErrBadInput},
		{"bad width", "Pf\nx 1\n-1.0\n", zenmetrics.ErrBadInput},
		{"zero scale", "Pf\n1 1\n0\n\x00\x00\x00\x00", zenmetrics.ErrBadInput},
		{"nan scale", "Pf\n1 1\nnan\n\x00\x00\x00\x00", zenmetrics.ErrBadInput},
		{"no data", "Pf\n1 1\n-1.0", zenmetrics.ErrBadInput},
		{"truncated", "Pf\n2 2\n-1.0\n" + strings.Repeat("\x00", 15), zenmetrics.ErrBadInput},
		{"huge header, no data", "Pf\n100000 100000\n-1.0\n", zenmetrics.ErrBadInput},
		{"lying header", "Pf\n30000 30000\n-1.0\n\x00\x00\x00\x00", zenmetrics.ErrBadInput},
		{"long token", "Pf\n" + strings.Repeat("1", 100) + " 1\n-1.0\n", zenmetrics.ErrBadInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ReadPFM(strings.NewReader(c.file))
			if err == nil {
				t.Fatalf("no error, got %dx%d", p.Width, p.Height)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v does not wrap %v", err, c.want)
			}
		})
	}
}

func TestWritePFMBadPlane(t *testing.T) {
	for _, p := range []*zenmetrics.FloatPlane{
		nil,
		{Width: 0, Height: 1},
		{Width: 2, Height: 2, Pix: make([]float32, 3)},
	} {
		if err := WritePFM(&bytes.Buffer{}, p); !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("%+v: error %v", p, err)
		}
		if HeatMap(p, 1, 2) != nil {
			t.Errorf("%+v: HeatMap not nil", p)
		}
	}
}

func TestButteraugliHeatMapThresholds(t *testing.T) {
	good, bad := ButteraugliHeatMapThresholds()
	// Independent check: fuzzyClass is a logistic curve, so the inverse has
	// a closed form on each side of 1.
	const scaler = 0.7777
	wantGood := 1 + math.Log(2/((1.5-scaler)/(2-scaler)+1)-1)/4.8
	wantBad := 1 + math.Log(2*scaler/0.5-1)/4.8
	if math.Abs(good-wantGood) > 1e-6 || math.Abs(bad-wantBad) > 1e-6 {
		t.Fatalf("good %.9f bad %.9f, want %.9f %.9f", good, bad, wantGood, wantBad)
	}
	if float64(float32(good)) != good || float64(float32(bad)) != bad {
		t.Fatalf("thresholds are not float32 values: %v %v", good, bad)
	}
}

// anchorDistance is the distance that lands exactly on colour k of the
// scale (k/11 of the way along it).
func anchorDistance(k int, good, bad float64) float64 {
	s := float64(k) / 11
	switch {
	case s < 0.3:
		return s / 0.3 * good
	case s < 0.45:
		return good + (s-0.3)/0.15*(bad-good)
	}
	return bad + (s-0.45)/0.5*12*bad
}

func TestHeatMapAnchors(t *testing.T) {
	good, bad := ButteraugliHeatMapThresholds()
	// The scale's colours after libjxl's square root and 8-bit rounding:
	// 1 → 255, 0.5 → sqrt(0.5)×255 = 180.3 → 180.
	want := [11][3]byte{
		{0, 0, 0}, {0, 0, 255}, {0, 255, 255}, {0, 255, 0}, {255, 255, 0}, {255, 0, 0},
		{255, 0, 255}, {180, 180, 255}, {255, 180, 180}, {255, 255, 180}, {255, 255, 255},
	}
	p := &zenmetrics.FloatPlane{Width: 11, Height: 1, Pix: make([]float32, 11)}
	for k := range want {
		p.Pix[k] = float32(anchorDistance(k, good, bad))
	}
	im := HeatMap(p, good, bad)
	if im.Format != zenmetrics.RGB8 || im.Width != 11 || im.Height != 1 || im.Stride != 33 {
		t.Fatalf("image %dx%d %v stride %d", im.Width, im.Height, im.Format, im.Stride)
	}
	for k, c := range want {
		got := [3]byte(im.Pix[3*k : 3*k+3])
		if got != c {
			t.Errorf("colour %d (distance %.6f): %v, want %v", k, p.Pix[k], got, c)
		}
	}
}

func TestHeatMapThresholdColours(t *testing.T) {
	good, bad := ButteraugliHeatMapThresholds()
	cases := []struct {
		d    float64
		want [3]byte
	}{
		{0, [3]byte{0, 0, 0}},
		{-1, [3]byte{0, 0, 0}},
		{math.NaN(), [3]byte{0, 0, 0}},
		// good: 3.3 along the scale, 30% from green to yellow:
		// sqrt(0.3)×255 = 139.7.
		{good, [3]byte{140, 255, 0}},
		// bad: 4.95, 95% from yellow to red: sqrt(0.05)×255 = 57.0.
		{bad, [3]byte{255, 57, 0}},
		// Halfway to good: 1.65, 65% from blue to cyan.
		{good / 2, [3]byte{0, 206, 255}},
		{20 * bad, [3]byte{255, 255, 255}},
		{1e30, [3]byte{255, 255, 255}},
		{math.Inf(1), [3]byte{255, 255, 255}},
	}
	p := &zenmetrics.FloatPlane{Width: len(cases), Height: 1, Pix: make([]float32, len(cases))}
	for i, c := range cases {
		p.Pix[i] = float32(c.d)
	}
	im := HeatMap(p, good, bad)
	for i, c := range cases {
		if got := [3]byte(im.Pix[3*i : 3*i+3]); got != c.want {
			t.Errorf("distance %v: %v, want %v", c.d, got, c.want)
		}
	}
}

func TestHeatMapOrientationAndPNG(t *testing.T) {
	// Top row black (0), bottom row white (huge), a gradient down a
	// column: the image keeps the plane's top-first order.
	good, bad := ButteraugliHeatMapThresholds()
	p := &zenmetrics.FloatPlane{Width: 2, Height: 3, Pix: []float32{0, 0, float32(good), float32(good), 100, 100}}
	im := HeatMap(p, good, bad)
	rows := [][]byte{{0, 0, 0, 0, 0, 0}, {140, 255, 0, 140, 255, 0}, {255, 255, 255, 255, 255, 255}}
	for y, want := range rows {
		if !bytes.Equal(im.Row(y), want) {
			t.Errorf("row %d: %v, want %v", y, im.Row(y), want)
		}
	}
	var b bytes.Buffer
	if err := EncodePNG(&b, im); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b.Bytes(), "heat.png", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if back.Format != zenmetrics.RGB8 || !bytes.Equal(back.Pix, im.Pix) {
		t.Fatalf("PNG round trip changed the heat map")
	}
}

func TestTo8RoundsHalfToEven(t *testing.T) {
	// Samples whose float32 product with 255 is exactly k+0.5 round to the
	// even neighbour, as the SIMD conversion libjxl uses does.
	ties := 0
	for k := 0; k < 255; k++ {
		v := (float32(k) + 0.5) / 255
		if v*255 != float32(k)+0.5 {
			continue
		}
		ties++
		want := byte(k + k%2)
		if got := to8(v); got != want {
			t.Errorf("to8(%v) (×255 = %v) = %d, want %d", v, v*255, got, want)
		}
	}
	if ties < 10 {
		t.Fatalf("only %d exact ties found", ties)
	}
	for _, c := range []struct {
		v    float32
		want byte
	}{{float32(math.NaN()), 0}, {-1, 0}, {0, 0}, {1, 255}, {2, 255}, {float32(math.Inf(1)), 255}, {0.4 / 255, 0}, {0.6 / 255, 1}} {
		if got := to8(c.v); got != c.want {
			t.Errorf("to8(%v) = %d, want %d", c.v, got, c.want)
		}
	}
}
