package cudatest

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// StripsConcurrent scores dist against a strip reference of ref from
// four goroutines at once (each takes its own slot: stream, staging,
// scratch and, recomputed, its own reference planes) and checks that
// every score equals want (a whole-image score of the same pair; the
// strip tests say why strips give it exactly).
func StripsConcurrent(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, ref, dist *zenmetrics.Image, band int, want float64) {
	t.Helper()
	ctx := context.Background()
	r, err := b.Prepare(ctx, m, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip, StripHeight: band})
	if err != nil {
		t.Fatalf("strip prepare: %v", err)
	}
	defer r.Release()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	got := make([]float64, 4)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3 && errs[g] == nil; i++ {
				var s zenmetrics.Score
				s, errs[g] = r.Score(ctx, dist)
				got[g] = s.Value
			}
		}()
	}
	wg.Wait()
	for g := range got {
		if errs[g] != nil || got[g] != want {
			t.Errorf("concurrent strip score %d: %.17g (%v), want %.17g", g, got[g], errs[g], want)
		}
	}
}

// StripsKeptAndRecomputed is the end every metric's TestStripsGPU shares:
// StripsConcurrent on a 300×900 pair with 96-row strips against that
// pair's whole-image score, with the reference kept and then recomputed
// (setKeep sets the package's forced choice; the caller resets it), and
// Estimate accepting strips of 64 MP.
func StripsKeptAndRecomputed(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, setKeep func(*bool)) {
	t.Helper()
	ref, dist := metrictest.SyntheticPair(300, 900, 9)
	whole, err := zenmetrics.ScoreOnce(context.Background(), b, m, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []bool{true, false} {
		setKeep(&keep)
		StripsConcurrent(t, b, m, ref, dist, 96, whole.Value)
	}
	if _, ok := b.Estimate(m, 8000, 8000, zenmetrics.ModeStrip); !ok {
		t.Error("Estimate declines strips of 64 MP")
	}
}

// StripRun is one strip reference of EachKeep: the residency it forced
// (Keep) and the strip count and residency cuda.StripsOf reported.
type StripRun struct {
	Keep     bool
	N        int
	Kept, OK bool
}

// Good reports whether the reference was a strip reference with the
// residency forced: a plan that ignored the forcing would test only one
// of the two paths.
func (r StripRun) Good() bool { return r.OK && r.Kept == r.Keep }

// EachKeep is the loop of every metric's TestStripsGPU case: it prepares
// ref with opt as strips of band rows (Mode ModeStrip, StripHeight band)
// with the reference forced kept, then recomputed (setKeep sets the
// package's forced choice; the caller resets it), runs score on the
// reference, releases it and hands the run to check, which compares the
// scores with the whole image's. A failed prepare or score fails the
// test at once, named name.
func EachKeep(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options, band int, name string, setKeep func(*bool), score func(r zenmetrics.Reference) error, check func(StripRun)) {
	t.Helper()
	opt.Mode, opt.StripHeight = zenmetrics.ModeStrip, band
	for _, keep := range []bool{true, false} {
		setKeep(&keep)
		r, err := b.Prepare(context.Background(), m, ref, opt)
		if err != nil {
			t.Fatalf("%s: strip prepare: %v", name, err)
		}
		run := StripRun{Keep: keep}
		run.N, run.Kept, run.OK = cuda.StripsOf(r)
		err = score(r)
		r.Release()
		if err != nil {
			t.Fatalf("%s: strip score: %v", name, err)
		}
		check(run)
	}
}

// MapsDiffer counts the values of a's distance map whose bits differ from
// b's (a's map has b's size): strips must give the whole image's map bit
// for bit.
func MapsDiffer(a, b zenmetrics.Score) int {
	n := 0
	for i, v := range a.DistMap.Pix {
		if math.Float32bits(v) != math.Float32bits(b.DistMap.Pix[i]) {
			n++
		}
	}
	return n
}

// StripsUnderCap is out of memory the ladder's way, on a device: with the
// free memory capped (Backend.SetFreeLimit) at a third of the whole
// image's estimate, a whole-image prepare of ref is refused with
// ErrOutOfMemory while Estimate(ModeStrip) proposes a plan within the
// strip budget (StripHeadroom of the cap) and strips planned by Prepare
// (several) score dist as the whole image does, bit for bit; with a cap
// of 1 MiB, below any plan, a strip prepare is refused with
// ErrOutOfMemory before anything is allocated (the device holds what it
// held) and Estimate declines strips, so the ladder goes on to the CPU.
// The cap is lifted at the end.
func StripsUnderCap(t *testing.T, b *cuda.Backend, m zenmetrics.Metric, ref, dist *zenmetrics.Image) {
	t.Helper()
	ctx := context.Background()
	defer b.SetFreeLimit(0)
	w, h := ref.Width, ref.Height
	whole, err := zenmetrics.ScoreOnce(ctx, b, m, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	full, _ := b.Estimate(m, w, h, zenmetrics.ModeFull)
	b.SetFreeLimit(full / 3)
	if _, err := b.Prepare(ctx, m, ref, zenmetrics.Options{}); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("a whole image beyond the cap: %v, want ErrOutOfMemory", err)
	}
	if n, ok := b.Estimate(m, w, h, zenmetrics.ModeStrip); !ok || float64(n) > cuda.StripHeadroom*float64(full/3) {
		t.Errorf("strips within a third: %d, %v", n, ok)
	}
	r, err := b.Prepare(ctx, m, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip})
	if err != nil {
		t.Fatalf("strips within a third: %v", err)
	}
	s, err := r.Score(ctx, dist)
	n, kept, _ := cuda.StripsOf(r)
	r.Release()
	t.Logf("%dx%d within %d MiB: %d strips (kept %v): %.17g, whole %.17g", w, h, (full/3)>>20, n, kept, s.Value, whole.Value)
	if err != nil || n < 2 || s.Value != whole.Value {
		t.Errorf("strips under the cap: %v, %d strips, %.17g vs %.17g", err, n, s.Value, whole.Value)
	}
	b.SetFreeLimit(1 << 20)
	before := b.Device().Held()
	if _, err := b.Prepare(ctx, m, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip}); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("strips within 1 MiB: %v, want ErrOutOfMemory", err)
	}
	if after := b.Device().Held(); after != before {
		t.Errorf("a refused strip prepare holds %d bytes", after-before)
	}
	if _, ok := b.Estimate(m, w, h, zenmetrics.ModeStrip); ok {
		t.Error("strips within 1 MiB estimated to fit")
	}
}
