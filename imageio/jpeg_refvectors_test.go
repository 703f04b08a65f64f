package imageio

import (
	"os"
	"path/filepath"
	"testing"
)

// TestJPEGQualityRefvectors decodes the original q*.jpg files of
// shared/refvectors/ssimulacra2/jpeg_quality and compares them with the
// PNG decodes stored beside them, which libjpeg-turbo 2.1.5 (djpeg, the
// library libjxl v0.12.0's tools link) wrote. Tolerance 0: equal samples
// make every metric score the .jpg exactly as libjxl scores it (libjxl
// gives the same scores for the .jpg and the .png, see the refvectors
// README).
func TestJPEGQualityRefvectors(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "refvectors", "ssimulacra2", "jpeg_quality")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s missing", dir)
		}
		t.Skipf("%s missing", dir)
	}
	for _, q := range []string{"q1", "q5", "q20", "q45", "q70", "q90"} {
		got, err := DecodeFile(filepath.Join(dir, q+".jpg"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := DecodeFile(filepath.Join(dir, q+".png"))
		if err != nil {
			t.Fatal(err)
		}
		sameImage(t, q, got, want)
	}
}
