package zensim

import (
	"context"
	"math"
	"sync"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestPipelined: scores of images of at least webgpu.StagingMin bytes go
// through the staging ring (pipe.go); four goroutines scoring different
// images against one whole-image reference at once must give, each, the
// same bits as the serial path (a strip reference of the same image,
// whose strips are bit-identical to the whole image: TestStrips), and the
// reference itself exactly 100.
func TestPipelined(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	const w, h = 700, 600 // RGB8: 1.26 MB, above webgpu.StagingMin
	ref, dist := metrictest.SyntheticPair(w, h, 11)
	if webgpu.RawBytes(ref) < webgpu.StagingMin {
		t.Fatalf("%d bytes: below webgpu.StagingMin, the ring would not be used", webgpu.RawBytes(ref))
	}
	// The reference, its distorted image and three variants of that (a
	// sample in every 97 nudged by k).
	dists := []*zenmetrics.Image{ref, dist}
	for k := byte(1); k <= 3; k++ {
		d := *dist
		d.Pix = append([]byte(nil), dist.Pix...)
		for i := 0; i < len(d.Pix); i += 97 {
			d.Pix[i] += k
		}
		dists = append(dists, &d)
	}
	serial, err := b.Prepare(ctx, zenmetrics.Zensim, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip, StripHeight: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer serial.Release()
	if serial.(*reference).piped() {
		t.Fatal("the strip reference is piped")
	}
	want := make([]float64, len(dists))
	for i, d := range dists {
		s, err := serial.Score(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = s.Value
	}
	r, err := b.Prepare(ctx, zenmetrics.Zensim, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.(*reference).piped() {
		t.Fatal("the whole-image reference is not piped")
	}
	got := make([]float64, len(dists))
	var wg sync.WaitGroup
	errs := make([]error, len(dists))
	for i, d := range dists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := r.Score(ctx, d)
			got[i], errs[i] = s.Value, err
		}()
	}
	wg.Wait()
	for i := range dists {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		t.Logf("image %d: pipelined %.17g, serial %.17g", i, got[i], want[i])
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Errorf("image %d: pipelined %.17g, serial (strips) %.17g", i, got[i], want[i])
		}
	}
	if got[0] != 100 {
		t.Errorf("the reference against itself: %v, want exactly 100", got[0])
	}
	t.Logf("ring slots made: %d of %d", r.(*reference).pipe.Made(), pipeSlots)
}
