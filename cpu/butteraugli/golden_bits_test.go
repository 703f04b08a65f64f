package butteraugli

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// goldenCase is one synthetic pair whose exact results were recorded with
// %.17g (and an FNV hash of the distance map bits) before the allocation
// and loop work on this package; any change of even one ulp in Max or either p-norm fails the test.
type goldenCase struct {
	w, h   int
	seed   uint64
	format zenmetrics.PixelFormat
	pnorm  float64
}

var goldenCases = []goldenCase{
	{64, 48, 1, zenmetrics.RGB8, 0},
	{97, 61, 2, zenmetrics.RGB8, 2},
	{200, 150, 3, zenmetrics.RGB8, 6},
	{129, 77, 4, zenmetrics.RGBA8, 0},
	{40, 33, 5, zenmetrics.Gray8, 1.5},
	{15, 12, 6, zenmetrics.RGB8, 0},
	{256, 256, 7, zenmetrics.RGB8, 0},
}

func goldenLine(t *testing.T, gc goldenCase, threads int) string {
	t.Helper()
	ref, dist := photoPair(gc.w, gc.h, gc.seed, gc.format)
	r, err := Prepare(ref, Config{Threads: threads, PNorm: gc.pnorm, DistMap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	// Score twice so that any state reused between scores is exercised.
	var s string
	for i := 0; i < 2; i++ {
		res, err := r.Score(dist)
		if err != nil {
			t.Fatal(err)
		}
		h := fnv.New64a()
		var b [4]byte
		for _, v := range res.DistMap {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
			h.Write(b[:])
		}
		s = fmt.Sprintf("%dx%d/%d max=%.17g p3=%.17g p=%.17g map=%016x", gc.w, gc.h, gc.seed, res.Max, res.PNorm3, res.PNorm, h.Sum64())
	}
	return s
}

func TestGoldenBits(t *testing.T) {
	for i, gc := range goldenCases {
		for _, threads := range []int{1, 3} {
			got := goldenLine(t, gc, threads)
			if i >= len(goldenWant) {
				t.Logf("%q,", got)
				continue
			}
			if !goldenMatch(t, got, goldenWant[i]) {
				t.Errorf("threads=%d:\n got  %s\n want %s", threads, got, goldenWant[i])
			}
		}
	}
}

// goldenPNormTol bounds the relative difference of the p-norms from the
// recorded amd64 values on other architectures. Everything up to them
// (the distance map, hence Max and the power sums) gives amd64's bits on
// arm64 too, but the p-norms end in math.Pow(sum/n, 1/p), and Go's Pow is
// not bit-identical across architectures (its Exp and Log are assembly on
// amd64, Go code that arm64 compiles with fused multiply-adds): seen under
// qemu-aarch64, 1 ulp on some corpus images. 1e-14 allows a few ulps.
const goldenPNormTol = 1e-14

// goldenMatch reports whether a golden line matches the recorded one:
// exactly on amd64; elsewhere the size, Max and the map's hash exactly and
// the p-norms to goldenPNormTol.
func goldenMatch(t *testing.T, got, want string) bool {
	t.Helper()
	if got == want {
		return true
	}
	if runtime.GOARCH == "amd64" {
		return false
	}
	type line struct {
		w, h, seed int
		max, p3, p float64
		hash       uint64
	}
	parse := func(s string) line {
		var l line
		if _, err := fmt.Sscanf(s, "%dx%d/%d max=%g p3=%g p=%g map=%x", &l.w, &l.h, &l.seed, &l.max, &l.p3, &l.p, &l.hash); err != nil {
			t.Fatalf("golden line %q: %v", s, err)
		}
		return l
	}
	g, w := parse(got), parse(want)
	near := func(a, b float64) bool { return a == b || math.Abs(a-b) <= goldenPNormTol*math.Abs(b) }
	return g.w == w.w && g.h == w.h && g.seed == w.seed && g.hash == w.hash &&
		math.Float64bits(g.max) == math.Float64bits(w.max) && near(g.p3, w.p3) && near(g.p, w.p)
}

// TestFastGoldenBits runs the golden cases on the fast path, forced on so
// that it also runs with -tags noasm or ZENMETRICS_NOSIMD (on cpusimd's Go
// twins): AVX2, NEON and the twins all reproduce the reference's float32
// steps, and nothing in the pipeline is fused into FMAs on any
// architecture, so the recorded amd64 bits must come out everywhere but
// in the last step of the p-norms (goldenMatch). Run it under
// qemu-aarch64 for arm64's NEON kernels.
func TestFastGoldenBits(t *testing.T) {
	saved := useFast
	defer func() { useFast = saved }()
	useFast = true
	for i, gc := range goldenCases {
		got := goldenLine(t, gc, 1)
		if !goldenMatch(t, got, goldenWant[i]) {
			t.Errorf("fast path:\n got  %s\n want %s", got, goldenWant[i])
		}
	}
}

var goldenWant = []string{
	"64x48/1 max=8.7032651901245117 p3=4.215585476009033 p=0 map=3f54014efa59bd3b",
	"97x61/2 max=11.233429908752441 p3=4.7684890797365691 p=3.9188582635351525 map=19b51d10fcffbe25",
	"200x150/3 max=9.6351375579833984 p3=4.269553952000944 p=5.6578471850233472 map=bda9178befa2eea9",
	"129x77/4 max=6.6055178642272949 p3=2.771482160944712 p=0 map=205698cde9f8fc21",
	"40x33/5 max=8.1956071853637695 p3=4.6777718553888938 p=3.925425617574049 map=2400ddfc41b1005b",
	"15x12/6 max=5.4745588302612305 p3=3.3844137009039899 p=0 map=5e548985b229209c",
	"256x256/7 max=9.2831459045410156 p3=3.7201526224372636 p=0 map=e345b56160a1debd",
}

// TestConcurrentScoresReuseBuffers scores one prepared reference from
// several goroutines at once, repeatedly, so that work buffers pass between
// Scores; every result must equal the sequential one bit for bit, and a
// handed-out distance map must not change afterwards.
func TestConcurrentScoresReuseBuffers(t *testing.T) {
	ref, _ := photoPair(90, 70, 11, zenmetrics.RGBA8)
	var dists []*zenmetrics.Image
	for seed := uint64(12); seed < 16; seed++ {
		_, d := photoPair(90, 70, seed, zenmetrics.RGBA8)
		dists = append(dists, d)
		_, d = photoPair(90, 70, seed, zenmetrics.RGB8)
		dists = append(dists, d)
	}
	r, err := Prepare(ref, Config{Threads: 2, DistMap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	want := make([]Result, len(dists))
	for i, d := range dists {
		if want[i], err = r.Score(d); err != nil {
			t.Fatal(err)
		}
		want[i].DistMap = append([]float32(nil), want[i].DistMap...)
	}
	first, err := r.Score(dists[0])
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for round := 0; round < 3; round++ {
				for i := range dists {
					k := (i + g) % len(dists)
					got, err := r.Score(dists[k])
					if err == nil && (got.Max != want[k].Max || got.PNorm3 != want[k].PNorm3) {
						err = fmt.Errorf("dist %d: got %.17g/%.17g, want %.17g/%.17g", k, got.Max, got.PNorm3, want[k].Max, want[k].PNorm3)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range first.DistMap {
		if math.Float32bits(v) != math.Float32bits(want[0].DistMap[i]) {
			t.Fatalf("distance map changed after later scores at %d", i)
		}
	}
}

// TestGoldenMatch checks goldenMatch itself: a changed map hash or Max
// never matches, a p-norm a few ulps off matches only off amd64, one off
// by more than goldenPNormTol never.
func TestGoldenMatch(t *testing.T) {
	want := goldenWant[1] // 97x61/2 max=11.233429908752441 p3=4.7684890797365691 p=3.9188582635351525 …
	onAmd64 := runtime.GOARCH == "amd64"
	p3 := 4.7684890797365691
	ulps := math.Float64frombits(math.Float64bits(p3) + 2)
	for _, c := range []struct {
		got  string
		want bool
	}{
		{want, true},
		{strings.Replace(want, "map=19b51d10fcffbe25", "map=19b51d10fcffbe24", 1), false},
		{strings.Replace(want, "max=11.233429908752441", "max=11.233429908752443", 1), false},
		{strings.Replace(want, "p3=4.7684890797365691", fmt.Sprintf("p3=%.17g", ulps), 1), !onAmd64},
		{strings.Replace(want, "p3=4.7684890797365691", fmt.Sprintf("p3=%.17g", p3*(1+1e-12)), 1), false},
		{strings.Replace(want, "p=3.9188582635351525", "p=3.9188582635351529", 1), !onAmd64},
	} {
		if c.got == want && c.want != true {
			t.Fatalf("case %q not changed", c.got)
		}
		if got := goldenMatch(t, c.got, want); got != c.want {
			t.Errorf("goldenMatch(%q) = %v, want %v", c.got, got, c.want)
		}
	}
}
