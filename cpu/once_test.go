package cpu

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestPrepareOnce: a PrepareOnce reference scores like a prepared one, bit
// for bit, on its first Score (one pass) and on later ones (prepared then),
// refuses what Prepare refuses, and honours Release.
func TestPrepareOnce(t *testing.T) {
	ctx := context.Background()
	for _, threads := range []int{1, 2} {
		b := New(Config{Threads: threads})
		ref, dist := metrictest.Synthetic(131, 77, 5, zenmetrics.RGB8)
		p, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := p.Score(ctx, dist)
		if err != nil {
			t.Fatal(err)
		}
		o, err := b.PrepareOnce(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			got, err := o.Score(ctx, dist)
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(got.Value) != math.Float64bits(want.Value) || got.Metric != want.Metric {
				t.Errorf("threads %d, Score %d: %v %.17g, prepared %v %.17g", threads, i, got.Metric, got.Value, want.Metric, want.Value)
			}
		}
		o.Release()
		if _, err := o.Score(ctx, dist); !errors.Is(err, zenmetrics.ErrReleased) {
			t.Errorf("Score after Release: %v", err)
		}
		small, _ := metrictest.Synthetic(7, 9, 1, zenmetrics.RGB8)
		_, errP := b.Prepare(ctx, zenmetrics.SSIMULACRA2, small, zenmetrics.Options{})
		_, errO := b.PrepareOnce(ctx, zenmetrics.SSIMULACRA2, small, zenmetrics.Options{})
		var tp, to *zenmetrics.TooSmallError
		if !errors.As(errP, &tp) || !errors.As(errO, &to) || *tp != *to {
			t.Errorf("too small: Prepare %v, PrepareOnce %v", errP, errO)
		}
	}
}
