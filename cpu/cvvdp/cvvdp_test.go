package cvvdp

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// synth builds a w×h image of format f from a smooth pattern plus a
// deterministic hash, so that every band of the pyramid has content.
func synth(w, h int, f zenmetrics.PixelFormat, seed uint32) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, f)
	ch, bps := f.Channels(), f.BytesPerSample()
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for c := 0; c < ch; c++ {
				u := uint32(x)*73856093 ^ uint32(y)*19349663 ^ uint32(c)*83492791 ^ seed*2654435761
				u ^= u >> 13
				u *= 0x5bd1e995
				u ^= u >> 15
				v := 0.5 + 0.3*math.Sin(float64(x)/7+float64(c)) + 0.15*math.Cos(float64(y)/5) + float64(u%64)/640
				v = min(max(v, 0), 1)
				o := y*im.Stride + (x*ch+c)*bps
				if bps == 2 {
					s := uint16(v * 65535)
					im.Pix[o], im.Pix[o+1] = byte(s>>8), byte(s)
				} else {
					im.Pix[o] = byte(v * 255)
				}
			}
		}
	}
	return im
}

// TestIdentical: an image against itself scores exactly 10 JOD for every
// display, size and format (every difference is exactly 0, and pycvvdp's
// safe_pow subtracts ε^p from (0 + ε)^p, leaving 0).
func TestIdentical(t *testing.T) {
	for _, f := range []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.Gray8, zenmetrics.RGBA16, zenmetrics.GrayA8} {
		for _, sz := range [][2]int{{2, 2}, {7, 5}, {64, 48}} {
			for _, disp := range []string{"", "standard_hdr_pq", "standard_hdr_hlg", "standard_hdr_linear"} {
				im := synth(sz[0], sz[1], f, 1)
				got, err := Score(im, im, Config{Display: disp})
				if err != nil {
					t.Fatal(err)
				}
				if got != 10 {
					t.Errorf("%v %dx%d %q: identical images score %v, want 10", f, sz[0], sz[1], disp, got)
				}
			}
		}
	}
}

// TestPixelsPerDegree compares every display model's pixels per degree with
// pycvvdp 0.5.4's vvdp_display_geometry.load(name).get_ppd() (run on this
// machine, printed with repr). Tolerance 1e-12 relative: the same float64
// operations, with Go's math library in place of C's (atan, tan and sqrt
// agree to an ulp or two).
func TestPixelsPerDegree(t *testing.T) {
	want := map[string]float64{
		"eizo_CG3146":              75.19218845811538,
		"htc_vive_pro":             13.153262507309297,
		"ipad_pro_12_9":            92.39150975665837,
		"iphone_12_pro":            159.61187740300227,
		"iphone_14_pro":            159.61187740300227,
		"iphone_14_pro_hdr":        159.61187740300227,
		"iphone_14_pro_hdr_vert":   159.61187740300227,
		"iphone_14_pro_vert":       159.61187740300227,
		"lg_oled_2017_hdr":         120.41073840016432,
		"lg_oled_2017_sdr":         120.41073840016432,
		"macbook_pro_16":           98.79241965219656,
		"sdr_4k_30":                60.54800551173376,
		"sdr_fhd_24":               37.842503853602885,
		"standard_4k":              75.40244934516305,
		"standard_fhd":             37.842503853602885,
		"standard_hdr_hlg":         75.40244934516305,
		"standard_hdr_linear":      75.40244934516305,
		"standard_hdr_linear_dark": 75.40244934516305,
		"standard_hdr_linear_zoom": 25.228336461402645,
		"standard_hdr_pq":          75.40244934516305,
		"standard_hmd":             13.153262507309297,
		"standard_phone":           120.56081547997547,
	}
	names := DisplayNames()
	if len(names) != len(want) {
		t.Errorf("%d display models, pycvvdp 0.5.4 has %d", len(names), len(want))
	}
	for _, n := range names {
		d, err := LookupDisplay(n)
		if err != nil {
			t.Fatal(err)
		}
		got := d.PixelsPerDegree()
		if w, ok := want[n]; !ok || !(math.Abs(got-w) <= 1e-12*w) {
			t.Errorf("%s: ppd %.17g, pycvvdp %.17g", n, got, w)
		}
	}
	// The default, and the value pycvvdp_synth_goldens.json records.
	d, _ := LookupDisplay("")
	if d.Name != "standard_4k" || math.Abs(d.PixelsPerDegree()-75.40244934516305) > 1e-12*75.4 {
		t.Errorf("default display %s, ppd %.17g", d.Name, d.PixelsPerDegree())
	}
}

// TestUnknownDisplay: an unknown name is ErrBadInput and lists the names.
func TestUnknownDisplay(t *testing.T) {
	im := synth(8, 8, zenmetrics.RGB8, 1)
	_, err := Prepare(im, Config{Display: "nope"})
	if !errors.Is(err, zenmetrics.ErrBadInput) || !strings.Contains(err.Error(), "standard_4k") || !strings.Contains(err.Error(), "iphone_14_pro") {
		t.Fatalf("unknown display: %v", err)
	}
}

// TestThreadsDeterministic: the score and the map are bit-identical for
// any thread count (every sum over pixels is kept per row and added in row
// order).
func TestThreadsDeterministic(t *testing.T) {
	ref := synth(301, 203, zenmetrics.RGB8, 1)
	dist := synth(301, 203, zenmetrics.RGB8, 2)
	var first Result
	for i, th := range []int{1, 2, 3, 8} {
		r, err := Prepare(ref, Config{Threads: th, DistMap: true})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.ScoreContext(context.Background(), dist)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = res
			continue
		}
		if math.Float64bits(res.JOD) != math.Float64bits(first.JOD) {
			t.Errorf("threads %d: %v, threads 1: %v", th, res.JOD, first.JOD)
		}
		for k := range res.DistMap.Pix {
			if math.Float32bits(res.DistMap.Pix[k]) != math.Float32bits(first.DistMap.Pix[k]) {
				t.Fatalf("threads %d: map differs at %d", th, k)
			}
		}
	}
}

// TestErrors: too small, mismatched sizes, released references.
func TestErrors(t *testing.T) {
	small := synth(1, 5, zenmetrics.RGB8, 1)
	if _, err := Prepare(small, Config{}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("1x5: %v", err)
	}
	var ts *zenmetrics.TooSmallError
	if _, err := Prepare(small, Config{}); !errors.As(err, &ts) {
		t.Errorf("1x5: not a TooSmallError: %v", err)
	}
	a, b := synth(8, 8, zenmetrics.RGB8, 1), synth(9, 8, zenmetrics.RGB8, 1)
	if _, err := Score(a, b, Config{}); !errors.Is(err, zenmetrics.ErrSizeMismatch) {
		t.Errorf("size mismatch: %v", err)
	}
	r, err := Prepare(a, Config{})
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	if _, err := r.Score(a); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Errorf("released: %v", err)
	}
	if _, err := Score(a, &zenmetrics.Image{Width: 8, Height: 8, Format: zenmetrics.RGB8, Stride: 24}, Config{}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("short buffer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := PrepareContext(ctx, a, Config{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestDistMap: the map has the image's size, is 0 for identical images,
// lies in [0, 1) and is larger where the distortion is: a patch changed in
// one quadrant shows there and not in the opposite quadrant.
func TestDistMap(t *testing.T) {
	ref := synth(128, 96, zenmetrics.RGB8, 1)
	dist := synth(128, 96, zenmetrics.RGB8, 1)
	for y := 10; y < 30; y++ {
		for x := 10; x < 40; x++ {
			o := y*dist.Stride + 3*x
			dist.Pix[o] ^= 0x20
		}
	}
	r, err := Prepare(ref, Config{DistMap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	same, err := r.ScoreContext(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range same.DistMap.Pix {
		if v != 0 {
			t.Fatalf("identical: map %v at %d", v, k)
		}
	}
	res, err := r.ScoreContext(context.Background(), dist)
	if err != nil {
		t.Fatal(err)
	}
	m := res.DistMap
	if m.Width != 128 || m.Height != 96 || len(m.Pix) != 128*96 {
		t.Fatalf("map %dx%d (%d)", m.Width, m.Height, len(m.Pix))
	}
	at := func(x, y int) float32 { return m.Pix[y*128+x] }
	for _, v := range m.Pix {
		if !(v >= 0 && v < 1) {
			t.Fatalf("map value %v outside [0, 1)", v)
		}
	}
	if !(at(25, 20) > 10*at(110, 80)) {
		t.Errorf("map at the patch %v, far from it %v", at(25, 20), at(110, 80))
	}
}
