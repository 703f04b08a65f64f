package butteraugli

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// sameResult fails unless a and b agree bit for bit (map included).
func sameResult(t *testing.T, what string, a, b Result) {
	t.Helper()
	if math.Float64bits(a.Max) != math.Float64bits(b.Max) ||
		math.Float64bits(a.PNorm3) != math.Float64bits(b.PNorm3) ||
		math.Float64bits(a.PNorm) != math.Float64bits(b.PNorm) ||
		a.Width != b.Width || a.Height != b.Height {
		t.Fatalf("%s: results differ: %+v vs %+v", what, summary(a), summary(b))
	}
	if len(a.DistMap) != len(b.DistMap) {
		t.Fatalf("%s: distance maps of %d and %d values", what, len(a.DistMap), len(b.DistMap))
	}
	for i := range a.DistMap {
		if math.Float32bits(a.DistMap[i]) != math.Float32bits(b.DistMap[i]) {
			t.Fatalf("%s: distance maps differ at %d: %v vs %v", what, i, a.DistMap[i], b.DistMap[i])
		}
	}
}

func summary(r Result) [4]float64 {
	return [4]float64{r.Max, r.PNorm3, r.PNorm, float64(len(r.DistMap))}
}

func mustCompare(t *testing.T, ref, dist *zenmetrics.Image, cfg Config) Result {
	t.Helper()
	r, err := Compare(ref, dist, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDeterministic(t *testing.T) {
	ref, dist := photoPair(97, 61, 7, zenmetrics.RGB8)
	cfg := Config{DistMap: true, PNorm: 2}
	a := mustCompare(t, ref, dist, cfg)
	if a.Max <= 0 || a.PNorm3 <= 0 || a.PNorm <= 0 {
		t.Fatalf("degenerate result %+v", summary(a))
	}
	sameResult(t, "second run", a, mustCompare(t, ref, dist, cfg))
}

// TestThreadIndependence: every thread count gives the same bits, for an
// odd-sized opaque pair and for a pair with alpha.
func TestThreadIndependence(t *testing.T) {
	for _, f := range []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8} {
		ref, dist := photoPair(203, 131, 3, f)
		base := mustCompare(t, ref, dist, Config{Threads: 1, DistMap: true, PNorm: 6})
		for _, n := range []int{2, 3, 5, 16} {
			got := mustCompare(t, ref, dist, Config{Threads: n, DistMap: true, PNorm: 6})
			sameResult(t, f.String()+" threads", base, got)
		}
	}
}

// TestCachedEqualsOneShot: a prepared reference scores several images, also
// from several goroutines at once, exactly as one-shot comparisons do.
func TestCachedEqualsOneShot(t *testing.T) {
	ref, _ := photoPair(120, 90, 11, zenmetrics.RGB8)
	var dists []*zenmetrics.Image
	var want []Result
	cfg := Config{DistMap: true}
	for s := uint64(0); s < 4; s++ {
		_, d := photoPair(120, 90, 100+s, zenmetrics.RGB8)
		dists = append(dists, d)
		want = append(want, mustCompare(t, ref, d, cfg))
	}
	r, err := Prepare(ref, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	for i, d := range dists {
		got, err := r.Score(d)
		if err != nil {
			t.Fatal(err)
		}
		sameResult(t, "cached", want[i], got)
	}
	var wg sync.WaitGroup
	got := make([]Result, len(dists))
	errs := make([]error, len(dists))
	for i, d := range dists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = r.Score(d)
		}()
	}
	wg.Wait()
	for i := range dists {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		sameResult(t, "concurrent cached", want[i], got[i])
	}
}

func TestIdenticalIsZero(t *testing.T) {
	ref, _ := photoPair(64, 48, 5, zenmetrics.RGB8)
	r := mustCompare(t, ref, ref, Config{DistMap: true})
	if r.Max != 0 || r.PNorm3 != 0 {
		t.Fatalf("identical images: max %v, 3-norm %v", r.Max, r.PNorm3)
	}
}

func TestSizeMismatch(t *testing.T) {
	a, _ := photoPair(32, 32, 1, zenmetrics.RGB8)
	b, _ := photoPair(32, 33, 1, zenmetrics.RGB8)
	_, err := Compare(a, b, Config{})
	var sm *zenmetrics.SizeMismatchError
	if !errors.Is(err, zenmetrics.ErrSizeMismatch) || !errors.As(err, &sm) {
		t.Fatalf("Compare: got %v, want a size mismatch", err)
	}
	r, err := Prepare(a, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if _, err := r.Score(b); !errors.Is(err, zenmetrics.ErrSizeMismatch) {
		t.Fatalf("Score: got %v, want a size mismatch", err)
	}
}

func TestReleased(t *testing.T) {
	a, b := photoPair(16, 16, 1, zenmetrics.RGB8)
	r, err := Prepare(a, Config{})
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	r.Release()
	if _, err := r.Score(b); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Fatalf("got %v, want ErrReleased", err)
	}
}

func TestBadInput(t *testing.T) {
	a, b := photoPair(16, 16, 1, zenmetrics.RGB8)
	for _, cfg := range []Config{{IntensityTarget: math.NaN()}, {PNorm: -1}, {PNorm: math.Inf(1)}} {
		if _, err := Compare(a, b, cfg); !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("config %+v: got %v, want ErrBadInput", cfg, err)
		}
	}
	short := *b
	short.Pix = short.Pix[:10]
	if _, err := Compare(a, &short, Config{}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("truncated buffer: got %v, want ErrBadInput", err)
	}
	if _, err := Compare(nil, b, Config{}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("nil reference: got %v, want ErrBadInput", err)
	}
}

// TestSmallImages: libjxl gives an all-zero map below 8 pixels (no error);
// from 8 on it scores.
func TestSmallImages(t *testing.T) {
	for _, sz := range [][2]int{{1, 1}, {7, 30}, {30, 7}, {7, 7}} {
		a, b := photoPair(sz[0], sz[1], 2, zenmetrics.RGB8)
		r, err := Compare(a, b, Config{DistMap: true, PNorm: 2})
		if err != nil {
			t.Fatalf("%v: %v", sz, err)
		}
		if r.Max != 0 || r.PNorm3 != 0 || r.PNorm != 0 || len(r.DistMap) != sz[0]*sz[1] {
			t.Fatalf("%v: got %+v, want zeros", sz, summary(r))
		}
	}
	a, b := photoPair(8, 8, 2, zenmetrics.RGB8)
	if r := mustCompare(t, a, b, Config{}); !(r.Max > 0) {
		t.Fatalf("8×8: max %v, want > 0", r.Max)
	}
}

// TestGrayIsRGB: a gray image is scored as R=G=B, as butteraugli_main does.
func TestGrayIsRGB(t *testing.T) {
	g1, g2 := photoPair(50, 40, 4, zenmetrics.Gray8)
	toRGB := func(g *zenmetrics.Image) *zenmetrics.Image {
		c := zenmetrics.NewImage(g.Width, g.Height, zenmetrics.RGB8)
		for y := 0; y < g.Height; y++ {
			for x, v := range g.Row(y) {
				copy(c.Row(y)[3*x:], []byte{v, v, v})
			}
		}
		return c
	}
	cfg := Config{DistMap: true}
	sameResult(t, "gray vs rgb", mustCompare(t, toRGB(g1), toRGB(g2), cfg), mustCompare(t, g1, g2, cfg))
}

// TestOpaqueAlpha: alpha 255 everywhere changes nothing; a translucent
// alpha does.
func TestOpaqueAlpha(t *testing.T) {
	a, b := photoPair(50, 40, 4, zenmetrics.RGB8)
	withAlpha := func(m *zenmetrics.Image, alpha byte) *zenmetrics.Image {
		c := zenmetrics.NewImage(m.Width, m.Height, zenmetrics.RGBA8)
		for y := 0; y < m.Height; y++ {
			for x := 0; x < m.Width; x++ {
				copy(c.Row(y)[4*x:], m.Row(y)[3*x:3*x+3])
				c.Row(y)[4*x+3] = alpha
			}
		}
		return c
	}
	cfg := Config{DistMap: true}
	plain := mustCompare(t, a, b, cfg)
	sameResult(t, "opaque RGBA", plain, mustCompare(t, withAlpha(a, 255), withAlpha(b, 255), cfg))
	sameResult(t, "opaque RGBA ref only", plain, mustCompare(t, withAlpha(a, 255), b, cfg))
	sameResult(t, "opaque RGBA dist only", plain, mustCompare(t, a, withAlpha(b, 255), cfg))
	half := mustCompare(t, withAlpha(a, 128), withAlpha(b, 128), cfg)
	if half.Max == plain.Max || !(half.Max > 0) {
		t.Fatalf("alpha 128: max %v, opaque %v", half.Max, plain.Max)
	}
}

// Test16Bit: 16-bit samples v·257 decode to (almost) the same light as
// 8-bit v.
func Test16Bit(t *testing.T) {
	a, b := photoPair(40, 40, 9, zenmetrics.RGB8)
	wide := func(m *zenmetrics.Image) *zenmetrics.Image {
		c := zenmetrics.NewImage(m.Width, m.Height, zenmetrics.RGB16)
		for y := 0; y < m.Height; y++ {
			for i, v := range m.Row(y) {
				c.Row(y)[2*i], c.Row(y)[2*i+1] = v, v
			}
		}
		return c
	}
	r8 := mustCompare(t, a, b, Config{})
	r16 := mustCompare(t, wide(a), wide(b), Config{})
	if relErr(r8.Max, r16.Max) > 1e-4 || relErr(r8.PNorm3, r16.PNorm3) > 1e-4 {
		t.Fatalf("8-bit %+v vs 16-bit %+v", summary(r8), summary(r16))
	}
}

// TestPNorm: PNorm 3 repeats the 3-norm, and another p matches the
// definition evaluated on the returned map.
func TestPNorm(t *testing.T) {
	a, b := photoPair(70, 50, 6, zenmetrics.RGB8)
	r3 := mustCompare(t, a, b, Config{PNorm: 3})
	if r3.PNorm != r3.PNorm3 {
		t.Fatalf("PNorm 3 = %v, 3-norm %v", r3.PNorm, r3.PNorm3)
	}
	const p = 2.5
	r := mustCompare(t, a, b, Config{PNorm: p, DistMap: true})
	var s [3]float64
	for _, v := range r.DistMap {
		d := math.Pow(float64(v), p)
		s[0] += d
		s[1] += d * d
		s[2] += d * d * d * d
	}
	n := float64(len(r.DistMap))
	want := (math.Pow(s[0]/n, 1/p) + math.Pow(s[1]/n, 1/(2*p)) + math.Pow(s[2]/n, 1/(4*p))) / 3
	if relErr(want, r.PNorm) > 1e-9 {
		t.Fatalf("p=%v: got %v, want %v", p, r.PNorm, want)
	}
	var m float32
	for _, v := range r.DistMap {
		m = max(m, v)
	}
	if float64(m) != r.Max {
		t.Fatalf("max %v is not the map's maximum %v", r.Max, m)
	}
}

// TestIntensityTarget: 0 and 80 are the same; a brighter display sees more.
func TestIntensityTarget(t *testing.T) {
	a, b := photoPair(60, 60, 8, zenmetrics.RGB8)
	def := mustCompare(t, a, b, Config{})
	sameResult(t, "80 nits", def, mustCompare(t, a, b, Config{IntensityTarget: 80}))
	bright := mustCompare(t, a, b, Config{IntensityTarget: 250})
	if bright.Max == def.Max {
		t.Fatalf("intensity target 250 gives the default max %v", def.Max)
	}
}

func TestEstimateBytes(t *testing.T) {
	if EstimateBytes(0, 10) != 0 {
		t.Fatal("empty image needs no memory")
	}
	if a, b := EstimateBytes(1000, 1000), EstimateBytes(2000, 2000); !(a > 100e6 && b > 3*a) {
		t.Fatalf("estimates %d, %d", a, b)
	}
}

func TestPrepareBackend(t *testing.T) {
	a, b := photoPair(40, 30, 12, zenmetrics.RGB8)
	want := mustCompare(t, a, b, Config{PNorm: 2, DistMap: true})
	ref, err := PrepareBackend(context.Background(), a, zenmetrics.Options{PNorm: 2, DistMap: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ref.Score(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Metric != zenmetrics.Butteraugli || sc.Value != want.Max || sc.Extras["pnorm3"] != want.PNorm3 ||
		sc.Extras["pnorm"] != want.PNorm || sc.DistMap == nil || sc.DistMap.Width != 40 || len(sc.DistMap.Pix) != 40*30 {
		t.Fatalf("score %+v, want %+v", sc, summary(want))
	}
	ref.Release()
	if _, err := ref.Score(context.Background(), b); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Fatalf("after Release: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := PrepareBackend(ctx, a, zenmetrics.Options{}, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}
