package imageio

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// BenchmarkPNGDecode decodes the corpus's 5 MP photos (the dandelions
// group) three ways in one run: image/png alone (png.Decode, no
// conversion), imageio's former path (image/png then the repack to the
// zenmetrics layout, decodePNGStd) and decodePNG. MB/s counts the decoded
// image's bytes. Compare with -cpu 1; BENCHMARKS.md has the table.
func BenchmarkPNGDecode(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join(shared.Dir(b), "corpus", "images", "dandelions__*.png"))
	if len(files) == 0 {
		b.Skip("no corpus/images/dandelions__*.png under shared/")
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		hd, err := readHeader(data)
		if err != nil {
			b.Fatal(err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "dandelions__"), ".png")
		out := int64(hd.w) * int64(hd.h) * int64(hd.pf.BytesPerPixel())
		b.Run("image-png/"+name, func(b *testing.B) {
			b.SetBytes(out)
			for b.Loop() {
				if _, err := png.Decode(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("std-path/"+name, func(b *testing.B) {
			b.SetBytes(out)
			for b.Loop() {
				if _, err := decodePNGStd(data, hd); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("imageio/"+name, func(b *testing.B) {
			b.SetBytes(out)
			for b.Loop() {
				if _, err := decodePNG(data, hd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
