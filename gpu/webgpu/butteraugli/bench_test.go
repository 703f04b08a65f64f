package butteraugli

import (
	"context"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestButteraugliPassProfile runs PassProfile (every dispatch timed on
// its own) and checks that every kernel of a two-level image shows up,
// labelled by level, and that the profiled score leaves later scores
// untouched; skipped without TimestampQuery.
func TestButteraugliPassProfile(t *testing.T) {
	dev := gputest.Device(t)
	ref, dist := metrictest.SyntheticPair(67, 41, 9)
	ctx := context.Background()
	r, err := prepareButteraugli(ctx, dev, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	before, err := r.Score(ctx, dist)
	if err != nil {
		t.Fatal(err)
	}
	times, err := PassProfile(ctx, r, dist)
	if err != nil {
		t.Fatal(err)
	}
	after, err := r.Score(ctx, dist)
	if err != nil {
		t.Fatal(err)
	}
	bfSame(t, "after the profile", before, after)
	if times == nil {
		t.Skip("no TimestampQuery on this device")
	}
	seen := map[string]bool{}
	total := 0.0
	for _, p := range times {
		seen[p.Label] = true
		total += p.DurationNS / 1e6
	}
	for _, k := range []string{"unpack s0", "subsample s1", "opsin s0", "opsin s1", "rowsLF s0", "colLF s1", "rowsHF s0",
		"colMF s0", "rowsUHF s1", "colUHF s0", "maskPre s0", "rowsMask s1", "colMask s0", "maltaX s0", "maltaY s1",
		"dc s0", "combine s1", "reduceMap", "reducePartials"} {
		if !seen[k] {
			t.Errorf("no pass %q in %v", k, times)
		}
	}
	if len(times) != 42 || !strings.HasPrefix(times[0].Label, "unpack") {
		t.Errorf("%d passes, first %q; want 42 from unpack", len(times), times[0].Label)
	}
	t.Logf("%d passes, %.3f ms", len(times), total)
}
