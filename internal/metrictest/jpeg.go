package metrictest

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// GoldenJPEG scores the original .jpg files of refvectors
// ssimulacra2/jpeg_quality (cjpeg q1..q90, 4:2:0 and 4:4:4) against
// source.png, and the PNG decodes libjpeg-turbo 2.1.5 wrote of them.
// libjxl v0.12.0's tools score the .jpg and the .png identically (they
// decode through that libjpeg-turbo; refvectors README), so the .jpg score
// must equal the .png score bit for bit: imageio's JPEG decoder is
// bit-exact with libjpeg-turbo, and the PNG pairs are what the golden
// tables hold libjxl's values for.
func GoldenJPEG(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, cfg Config) {
	dir := shared.Dir(t, "refvectors")
	base := filepath.Join("ssimulacra2", "jpeg_quality")
	ref := load(t, dir, filepath.Join(base, "source.png"))
	if ref.Width < cfg.MinSide || ref.Height < cfg.MinSide {
		t.Skipf("256×256 pairs are below the metric's minimum side %d", cfg.MinSide)
	}
	for _, q := range []string{"q1", "q5", "q20", "q45", "q70", "q90"} {
		jpg := load(t, dir, filepath.Join(base, q+".jpg"))
		png := load(t, dir, filepath.Join(base, q+".png"))
		got := score(t, b, m, cfg.Options, ref, jpg)
		want := score(t, b, m, cfg.Options, ref, png)
		t.Logf("%v %s.jpg %.8f, %s.png %.8f", m, q, got, q, want)
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%v: %s.jpg scores %.8f, its libjpeg-turbo decode %s.png %.8f", m, q, got, q, want)
		}
	}
}
