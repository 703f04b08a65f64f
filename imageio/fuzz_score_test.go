package imageio_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// scorePairs are seeds for FuzzDecodeAndScore: same-size pairs of every
// decoder and layout, plus pairs that differ in size or layout.
var scorePairs = [][2]string{
	{"src_rgb_67x45.png", "lossy_67x45.webp"},
	{"src_rgb_67x45.png", "jpeg420_67x45.jpg"},
	{"src_rgb_67x45.png", "lossless_67x45.webp"},
	{"src_rgba_67x45.png", "lossy_alpha_67x45.webp"},
	{"src_rgba_67x45.png", "lossless_alpha_67x45.webp"},
	{"src_gray_67x45.png", "jpeggray_67x45.jpg"},
	{"src_rgb_64x48.png", "jpegprog_64x48.jpg"},
	{"src_gray_67x45.png", "src_rgba_67x45.png"},
	{"src_rgb_64x48.png", "lossy_67x45.webp"},
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(shared.Testdata(t, "imageio", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkScoreContract decodes two blobs and, when both decode, scores them
// with the CPU SSIMULACRA2 reference: no panic (recovered or not), a typed
// error, or a finite score.
func checkScoreContract(t testing.TB, a, b []byte) {
	t.Helper()
	opt := imageio.Options{MaxPixels: 1 << 16}
	ref, err := imageio.Decode(a, "a", opt)
	if err != nil {
		return
	}
	dist, err := imageio.Decode(b, "b", opt)
	if err != nil {
		return
	}
	s, err := ssim2.Score(ref, dist, ssim2.Config{Threads: 1})
	if err != nil {
		var pe *zenmetrics.PanicError
		if errors.As(err, &pe) {
			t.Fatalf("ssim2 panicked on %dx%d %v vs %dx%d %v: %v\n%s",
				ref.Width, ref.Height, ref.Format, dist.Width, dist.Height, dist.Format, pe.Value, pe.Stack)
		}
		if !errors.Is(err, zenmetrics.ErrBadInput) && !errors.Is(err, zenmetrics.ErrSizeMismatch) &&
			!errors.Is(err, zenmetrics.ErrUnsupported) {
			t.Fatalf("untyped error: %v", err)
		}
		return
	}
	if math.IsNaN(s) || math.IsInf(s, 0) {
		t.Fatalf("score %v for %dx%d %v vs %v", s, ref.Width, ref.Height, ref.Format, dist.Format)
	}
}

func FuzzDecodeAndScore(f *testing.F) {
	for _, p := range scorePairs {
		f.Add(readTestdata(f, p[0]), readTestdata(f, p[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		checkScoreContract(t, a, b)
	})
}

// TestDecodeAndScoreMutated runs the fuzz contract on the seeds and on
// random mutations of them in every plain `go test`.
func TestDecodeAndScoreMutated(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	n := 200
	if testing.Short() {
		n = 40
	}
	scored := 0
	for i := 0; i < n; i++ {
		p := scorePairs[i%len(scorePairs)]
		a, b := readTestdata(t, p[0]), bytes.Clone(readTestdata(t, p[1]))
		if i >= len(scorePairs) {
			for k := r.IntN(3) + 1; k > 0; k-- {
				j := r.IntN(len(b)-40) + 40 // leave the headers alone: mostly decodable garbage
				b[j] = byte(r.IntN(256))
			}
		}
		checkScoreContract(t, a, b)
		scored++
	}
	// The seeds themselves must score (same size and layout).
	for _, p := range scorePairs[:7] {
		ref, err := imageio.Decode(readTestdata(t, p[0]), p[0], imageio.Options{})
		if err != nil {
			t.Fatal(err)
		}
		dist, err := imageio.Decode(readTestdata(t, p[1]), p[1], imageio.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := ssim2.Score(ref, dist, ssim2.Config{})
		if err != nil || s > 100 || s < -100 {
			t.Errorf("%s vs %s: %v %v", p[0], p[1], s, err)
		}
		t.Logf("%s vs %s: ssim2 %.4f", p[0], p[1], s)
	}
}
