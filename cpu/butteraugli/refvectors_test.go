package butteraugli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// The synthetic pairs of refvectors/butteraugli are not stored as images;
// they are regenerated here from the rules in refvectors/README.md and
// checked against the hashes of the regenerated RGB bytes recorded there.

// rgbImg is an interleaved RGB8 buffer.
type rgbImg struct {
	w, h int
	p    []byte
}

func newRGB(w, h int) *rgbImg { return &rgbImg{w, h, make([]byte, 3*w*h)} }

func (m *rgbImg) set(x, y int, r, g, b byte) {
	o := 3 * (y*m.w + x)
	m.p[o], m.p[o+1], m.p[o+2] = r, g, b
}

func (m *rgbImg) gray(x, y int, v byte) { m.set(x, y, v, v, v) }

func (m *rgbImg) image() *zenmetrics.Image {
	return &zenmetrics.Image{Width: m.w, Height: m.h, Format: zenmetrics.RGB8, Stride: 3 * m.w, Pix: m.p}
}

func (m *rgbImg) clone() *rgbImg {
	c := newRGB(m.w, m.h)
	copy(c.p, m.p)
	return c
}

// mapBytes returns a copy with f applied to every byte.
func (m *rgbImg) mapBytes(f func(v byte) byte) *rgbImg {
	c := m.clone()
	for i, v := range c.p {
		c.p[i] = f(v)
	}
	return c
}

func clampByte(v int) byte {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return byte(v)
}

// shift is the `+d` rule: every byte plus d, clamped.
func (m *rgbImg) shift(d int) *rgbImg {
	return m.mapBytes(func(v byte) byte { return clampByte(int(v) + d) })
}

// lcg is the generator of the rules: s = s·6364136223846793005 +
// 1442695040888963407 (mod 2^64), byte = (s>>33)&255.
type lcg struct{ s uint64 }

func (l *lcg) next() byte {
	l.s = l.s*6364136223846793005 + 1442695040888963407
	return byte(l.s >> 33)
}

func lcgImage(w, h int, seed uint64) *rgbImg {
	m := newRGB(w, h)
	l := lcg{seed}
	for i := range m.p {
		m.p[i] = l.next()
	}
	return m
}

// boxBlur3 is the 3×3 mean over the neighbours inside the image, per
// channel, truncating.
func (m *rgbImg) boxBlur3() *rgbImg {
	c := newRGB(m.w, m.h)
	for y := 0; y < m.h; y++ {
		for x := 0; x < m.w; x++ {
			for ch := 0; ch < 3; ch++ {
				sum, n := 0, 0
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						xx, yy := x+dx, y+dy
						if xx < 0 || yy < 0 || xx >= m.w || yy >= m.h {
							continue
						}
						sum += int(m.p[3*(yy*m.w+xx)+ch])
						n++
					}
				}
				c.p[3*(y*m.w+x)+ch] = byte(sum / n)
			}
		}
	}
	return c
}

func grayFunc(w, h int, f func(x, y int) byte) *rgbImg {
	m := newRGB(w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			m.gray(x, y, f(x, y))
		}
	}
	return m
}

func colorGradient(w, h int) *rgbImg {
	m := newRGB(w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			m.set(x, y, byte(x*255/(w-1)), byte(y*255/(h-1)), 128)
		}
	}
	return m
}

func checker(w, h, n int, even, odd byte) *rgbImg {
	return grayFunc(w, h, func(x, y int) byte {
		if (x/n+y/n)%2 == 0 {
			return even
		}
		return odd
	})
}

// swapRB and rotateGBR are the colour swaps: (B,G,R) and (G,B,R).
func (m *rgbImg) swapRB() *rgbImg {
	c := m.clone()
	for i := 0; i < len(c.p); i += 3 {
		c.p[i], c.p[i+2] = m.p[i+2], m.p[i]
	}
	return c
}

func (m *rgbImg) rotateGBR() *rgbImg {
	c := m.clone()
	for i := 0; i < len(c.p); i += 3 {
		c.p[i], c.p[i+1], c.p[i+2] = m.p[i+1], m.p[i+2], m.p[i]
	}
	return c
}

var randomSeeds = [5]uint64{
	0x123456789ABCDEF0, 0xDEADBEEFCAFEBABE, 0x0BADC0DEFEEDFACE, 0x1337133742424242, 0xAAAAAAAA55555555,
}

// float32 sine and power, from the double functions rounded once; the
// README notes libm's float functions may differ in the last bit.
func sinf(x float32) float32           { return float32(math.Sin(float64(x))) }
func powf(x, y float32) float32        { return float32(math.Pow(float64(x), float64(y))) }
func sqrtf(x float32) float32          { return float32(math.Sqrt(float64(x))) }
func truncByte(v float32) byte         { return clampByte(int(v)) }
func clampf(v, lo, hi float32) float32 { return max(lo, min(hi, v)) }

var (
	reSize   = regexp.MustCompile(`^(.*)_(\d+)x(\d+)$`)
	reUShift = regexp.MustCompile(`^uniform_gray_128_shift_(\d+)$`)
	reSeed   = regexp.MustCompile(`^random_seed(\d)_(shift_10|noise_20)$`)
	reCheck  = regexp.MustCompile(`^checkerboard_vs_inverse_(\d+)px$`)
	reSine   = regexp.MustCompile(`^sine_(\d)x\d_shift_10$`)
)

// synth builds the (a, b) pair of a case name such as "radial_shift_15_33x47".
func synth(name string) (a, b *rgbImg, err error) {
	m := reSize.FindStringSubmatch(name)
	if m == nil {
		return nil, nil, fmt.Errorf("no size in %q", name)
	}
	kind := m[1]
	w, _ := strconv.Atoi(m[2])
	h, _ := strconv.Atoi(m[3])
	switch {
	case reUShift.MatchString(kind):
		s, _ := strconv.Atoi(reUShift.FindStringSubmatch(kind)[1])
		a = grayFunc(w, h, func(int, int) byte { return 128 })
		return a, a.shift(s), nil
	case strings.HasPrefix(kind, "uniform_") && strings.HasSuffix(kind, "_shift_20"):
		a, b = newRGB(w, h), newRGB(w, h)
		var ca, cb [3]byte
		switch kind {
		case "uniform_red_shift_20":
			ca, cb = [3]byte{128, 64, 64}, [3]byte{148, 64, 64}
		case "uniform_green_shift_20":
			ca, cb = [3]byte{64, 128, 64}, [3]byte{64, 148, 64}
		case "uniform_blue_shift_20":
			ca, cb = [3]byte{64, 64, 128}, [3]byte{64, 64, 148}
		default:
			return nil, nil, fmt.Errorf("unknown case %q", kind)
		}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				a.set(x, y, ca[0], ca[1], ca[2])
				b.set(x, y, cb[0], cb[1], cb[2])
			}
		}
		return a, b, nil
	case kind == "gradient_h_shift_15":
		a = grayFunc(w, h, func(x, y int) byte { return byte(x * 255 / (w - 1)) })
		return a, a.shift(15), nil
	case kind == "gradient_v_shift_15":
		a = grayFunc(w, h, func(x, y int) byte { return byte(y * 255 / (h - 1)) })
		return a, a.shift(15), nil
	case kind == "gradient_diag_shift_20":
		a = grayFunc(w, h, func(x, y int) byte { return byte((x + y) * 255 / (w + h - 2)) })
		return a, a.shift(20), nil
	case kind == "color_gradient_shift_10":
		a = colorGradient(w, h)
		return a, a.shift(10), nil
	case reCheck.MatchString(kind):
		n, _ := strconv.Atoi(reCheck.FindStringSubmatch(kind)[1])
		return checker(w, h, n, 200, 50), checker(w, h, n, 50, 200), nil
	case kind == "checkerboard_shift_10":
		a = checker(w, h, 2, 200, 50)
		return a, a.shift(10), nil
	case kind == "stripes_h_2px_shift_15":
		a = grayFunc(w, h, func(x, y int) byte { return [2]byte{200, 50}[(y/2)%2] })
		return a, a.shift(15), nil
	case kind == "stripes_v_2px_shift_15":
		a = grayFunc(w, h, func(x, y int) byte { return [2]byte{200, 50}[(x/2)%2] })
		return a, a.shift(15), nil
	case reSine.MatchString(kind):
		f, _ := strconv.Atoi(reSine.FindStringSubmatch(kind)[1])
		tau := float32(2 * math.Pi)
		a = grayFunc(w, h, func(x, y int) byte {
			fx := sinf(float32(x*f) * tau / float32(w))
			fy := sinf(float32(y*f) * tau / float32(h))
			return truncByte((fx + fy + 2) / 4 * 255)
		})
		return a, a.shift(10), nil
	case kind == "radial_shift_15":
		cx, cy := float32(w)/2, float32(h)/2
		maxd := sqrtf(float32(cx*cx) + float32(cy*cy)) // products rounded: arm64 would fuse them
		a = grayFunc(w, h, func(x, y int) byte {
			dx, dy := float32(x)-cx, float32(y)-cy
			d := sqrtf(float32(dx*dx) + float32(dy*dy))
			return truncByte(clampf((1-d/maxd)*255, 0, 255))
		})
		return a, a.shift(15), nil
	case kind == "edge_v_shift_10":
		a = grayFunc(w, h, func(x, y int) byte { return edge(x, w) })
		return a, a.shift(10), nil
	case kind == "edge_h_shift_10":
		a = grayFunc(w, h, func(x, y int) byte { return edge(y, h) })
		return a, a.shift(10), nil
	case kind == "edge_v_vs_blur":
		a = grayFunc(w, h, func(x, y int) byte { return edge(x, w) })
		return a, a.boxBlur3(), nil
	case reSeed.MatchString(kind):
		sm := reSeed.FindStringSubmatch(kind)
		k, _ := strconv.Atoi(sm[1])
		a = lcgImage(w, h, randomSeeds[k])
		if sm[2] == "shift_10" {
			return a, a.shift(10), nil
		}
		l := lcg{randomSeeds[k] + 1}
		b = a.clone()
		for i, v := range a.p {
			n := int(l.next()) - 128
			b.p[i] = clampByte(int(v) + n*20/128)
		}
		return a, b, nil
	case strings.HasPrefix(kind, "random_mid_"):
		a = lcgImage(w, h, 0xFEDCBA9876543210).mapBytes(func(v byte) byte { return byte(32 + int(v)*193/256) })
		switch strings.TrimPrefix(kind, "random_mid_") {
		case "contrast_1.2":
			b = a.mapBytes(func(v byte) byte {
				// The product rounded before +128, as on amd64 (arm64 would
				// fuse it, and the image would change).
				return truncByte(clampf(float32((float32(v)-128)*float32(1.2))+128, 0, 255))
			})
		case "gamma_0.9":
			b = a.mapBytes(func(v byte) byte {
				return truncByte(clampf(powf(float32(v)/255, 0.9)*255, 0, 255))
			})
		case "blur":
			b = a.boxBlur3()
		case "quantize_32":
			b = a.mapBytes(func(v byte) byte { return byte(min(int(v)/8*8+4, 255)) })
		default:
			return nil, nil, fmt.Errorf("unknown case %q", kind)
		}
		return a, b, nil
	case kind == "color_grad_channel_swap":
		a = colorGradient(w, h)
		return a, a.swapRB(), nil
	case kind == "color_grad_hue_shift":
		a = colorGradient(w, h)
		return a, a.rotateGBR(), nil
	case kind == "random_color_channel_swap":
		a = lcgImage(w, h, 0x1234567890ABCDEF)
		return a, a.swapRB(), nil
	case kind == "random_color_hue_shift":
		a = lcgImage(w, h, 0x1234567890ABCDEF)
		return a, a.rotateGBR(), nil
	}
	return nil, nil, fmt.Errorf("unknown case %q", kind)
}

func edge(v, n int) byte {
	if v < n/2 {
		return 50
	}
	return 200
}

func sha16(p []byte) string {
	s := sha256.Sum256(p)
	return hex.EncodeToString(s[:])[:16]
}

// refvectorCases reads refvectors/butteraugli/expected.tsv.
func refvectorCases(t *testing.T) *shared.Table {
	dir := shared.Dir(t, "refvectors", "butteraugli")
	tab, err := shared.ReadTSV(filepath.Join(dir, "expected.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestRefvectorImages regenerates every synthetic pair and compares the
// hashes of its RGB bytes with the recorded ones.
func TestRefvectorImages(t *testing.T) {
	tab := refvectorCases(t)
	if !tab.Has("regen_ref_rgb_sha256_16") {
		t.Skip("no hash columns")
	}
	bad := 0
	for i := range tab.Rows {
		name := tab.Get(i, "case")
		a, b, err := synth(name)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sha16(a.p), tab.Get(i, "regen_ref_rgb_sha256_16"); got != want {
			bad++
			t.Errorf("%s: reference hash %s, want %s", name, got, want)
		}
		if got, want := sha16(b.p), tab.Get(i, "regen_dist_rgb_sha256_16"); got != want {
			bad++
			t.Errorf("%s: distorted hash %s, want %s", name, got, want)
		}
	}
	t.Logf("%d cases, %d hash mismatches", len(tab.Rows), bad)
}

// TestParityRefvectors scores all 908 synthetic pairs and compares them
// with libjxl v0.12.0's max and 3-norm (the libjxl_v0.12.0_* columns), and
// the max also with the upstream expected value (libjxl d2c7032e), each to
// the upstream relative tolerance of 1e-3.
func TestParityRefvectors(t *testing.T) {
	tab := refvectorCases(t)
	var wMax, wNorm, wUp worst
	for i := range tab.Rows {
		name := tab.Get(i, "case")
		a, b, err := synth(name)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Compare(a.image(), b.image(), Config{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wantMax, err1 := tab.Float(i, "libjxl_v0.12.0_max")
		wantNorm, err2 := tab.Float(i, "libjxl_v0.12.0_3norm")
		upstream, err3 := tab.Float(i, "expected")
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("%s: bad expected values", name)
		}
		e1 := wMax.add(name, wantMax, res.Max)
		e2 := wNorm.add(name, wantNorm, res.PNorm3)
		e3 := wUp.add(name, upstream, res.Max)
		if e1 > parityTol || e2 > parityTol || e3 > parityTol {
			t.Errorf("%s: max %.10f want %.10f (rel %.2g; upstream %.10f rel %.2g); 3-norm %.6f want %.6f (rel %.2g)",
				name, res.Max, wantMax, e1, upstream, e3, res.PNorm3, wantNorm, e2)
		}
	}
	t.Logf("max vs libjxl v0.12.0:      %v", &wMax)
	t.Logf("3-norm vs libjxl v0.12.0:   %v", &wNorm)
	t.Logf("max vs upstream (d2c7032e): %v", &wUp)
}
