package ssim2

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestScorePairGolden: ScorePair on the fast path (forced on, so the Go
// twins run it with -tags noasm) gives the recorded golden scores, the
// same bits as Prepare and Score, for every case: streamed in one pass
// where the reference has no alpha, through Prepare and Score otherwise.
func TestScorePairGolden(t *testing.T) {
	defer setSIMD(true)()
	for i, c := range goldenCases {
		ref, dist := c.Pair()
		got, err := ScorePair(context.Background(), ref, dist, Config{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		var want float64
		if _, err := fmt.Sscan(goldenScores[i], &want); err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(got) != math.Float64bits(want) && (runtime.GOARCH == "amd64" || math.Abs(got-want) > goldenOtherArchTol) {
			t.Errorf("%dx%d %v seed %d (streamed %v): %.17g, recorded %s", c.W, c.H, c.F, c.Seed, pairStreams(ref, Config{Threads: 1}), got, goldenScores[i])
		}
	}
}

// TestScorePairBitIdentical: the one-pass pair against Prepare and Score
// on the fast path, bit for bit, at sizes that end in partial groups of
// eight rows and widths off multiples of 8, down to the smallest image,
// with a distorted image that has real alpha (blended on 0.5) against a
// reference without.
func TestScorePairBitIdentical(t *testing.T) {
	defer setSIMD(true)()
	sizes := [][2]int{{8, 8}, {9, 9}, {15, 17}, {16, 16}, {23, 41}, {64, 33}, {130, 97}, {257, 190}}
	for i, s := range sizes {
		for _, f := range []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.Gray16, zenmetrics.RGBA8} {
			ref, dist := metrictest.Synthetic(s[0], s[1], int64(90+i), f)
			if f.HasAlpha() {
				ref = dropAlpha(ref)
			}
			if !pairStreams(ref, Config{Threads: 1}) {
				t.Fatalf("%v reference not streamed", ref.Format)
			}
			got, err := ScorePair(context.Background(), ref, dist, Config{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			r, err := Prepare(ref, Config{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			want, err := r.Score(dist)
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("%dx%d %v: one pass %.17g, Prepare and Score %.17g", s[0], s[1], f, got, want)
			}
		}
	}
}

// dropAlpha is an RGBA8 image without its alpha channel.
func dropAlpha(im *zenmetrics.Image) *zenmetrics.Image {
	out := zenmetrics.NewImage(im.Width, im.Height, zenmetrics.RGB8)
	for y := 0; y < im.Height; y++ {
		src, dst := im.Pix[y*im.Stride:], out.Pix[y*out.Stride:]
		for x := 0; x < im.Width; x++ {
			copy(dst[3*x:3*x+3], src[4*x:4*x+3])
		}
	}
	return out
}
