package cudatest

import (
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// AllFormats are the eight pixel formats a metric takes, in the order the
// TestVsCPU grids use (their seeds depend on it).
var AllFormats = []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.Gray8, zenmetrics.GrayA8,
	zenmetrics.RGB16, zenmetrics.RGBA16, zenmetrics.Gray16, zenmetrics.GrayA16}

// FormatGrid calls check on the pairs of the metrics' TestVsCPU grid: a
// synthetic pair of every size in every format (seed 100+10i+j for format
// i and size j), named FORMAT_WxH, with every third pair ((i+j)%3 == 0)
// copied by pad into padded rows, so that strides other than the packed
// one are scored too.
func FormatGrid(sizes [][2]int, pad func(*zenmetrics.Image) *zenmetrics.Image, check func(name string, ref, dist *zenmetrics.Image)) {
	for i, f := range AllFormats {
		for j, sz := range sizes {
			ref, dist := metrictest.Synthetic(sz[0], sz[1], int64(100+10*i+j), f)
			if (i+j)%3 == 0 {
				ref, dist = pad(ref), pad(dist)
			}
			check(fmt.Sprintf("%v_%dx%d", f, sz[0], sz[1]), ref, dist)
		}
	}
}

// LargePairs calls check on the 2047×1537 and 1601×1199 synthetic pairs
// (seed 23), named WxH: odd sizes of several upload chunks each.
func LargePairs(check func(name string, ref, dist *zenmetrics.Image)) {
	for _, sz := range [][2]int{{2047, 1537}, {1601, 1199}} {
		ref, dist := metrictest.SyntheticPair(sz[0], sz[1], 23)
		check(fmt.Sprintf("%dx%d", sz[0], sz[1]), ref, dist)
	}
}

// FormatPairs calls f with every size and every pair of formats (of the
// reference, then of the distorted image), named WxH_REF_DIST: the grid of
// the launch-plan tests.
func FormatPairs(sizes [][2]int, formats []zenmetrics.PixelFormat, f func(name string, w, h int, rf, df zenmetrics.PixelFormat)) {
	for _, sz := range sizes {
		for _, rf := range formats {
			for _, df := range formats {
				f(fmt.Sprintf("%dx%d_%v_%v", sz[0], sz[1], rf, df), sz[0], sz[1], rf, df)
			}
		}
	}
}
