package iwssim

import (
	"context"
	"fmt"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// BenchmarkIWSSIMCached scores a distorted image against a prepared
// reference (the whole GPU side: upload, pyramid, statistics, read-back
// of the row sums), 1 MP and 16 MP synthetic RGB8 pairs.
func BenchmarkIWSSIMCached(b *testing.B) {
	be := backend(b)
	for _, side := range []int{1024, 4096} {
		b.Run(fmt.Sprintf("%dMP", side*side>>20), func(b *testing.B) {
			ref, dist := metrictest.SyntheticPair(side, side, 1)
			r, err := be.Prepare(context.Background(), zenmetrics.IWSSIM, ref, zenmetrics.Options{})
			if err != nil {
				b.Skip(err)
			}
			defer r.Release()
			if _, err := r.Score(context.Background(), dist); err != nil { // warm-up
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.Score(context.Background(), dist); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
