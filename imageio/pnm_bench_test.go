package imageio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// photoLike is a w×h RGB8 image of smooth gradients plus a little noise,
// which PNG compresses about as well as a photo (roughly 2:1), so the PNG
// side of BenchmarkPNMDecode is not flattered by a trivially compressible
// picture.
func photoLike(w, h int) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, zenmetrics.RGB8)
	x := uint64(0x9e3779b97f4a7c15)
	for y := 0; y < h; y++ {
		row := im.Row(y)
		for i := 0; i < w; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			n := int(x>>60) - 8
			row[3*i] = byte(min(255, max(0, i*255/w+n)))
			row[3*i+1] = byte(min(255, max(0, y*255/h+n)))
			row[3*i+2] = byte(min(255, max(0, (i+y)*255/(w+h)+n/2)))
		}
	}
	return im
}

// BenchmarkPNMDecode decodes one 16 MP (4096×4096) RGB image stored as P6
// and as PNG, from memory (Decode: the PPM raster is copied) and from a
// file (DecodeFile: read into a buffer that the PPM image then keeps), with
// a plain copy of the same bytes for scale. MB/s counts the decoded
// image's 48 MiB. Run with -cpu 1 -benchtime 10x.
func BenchmarkPNMDecode(b *testing.B) {
	const w, h = 4096, 4096
	im := photoLike(w, h)
	var png bytes.Buffer
	if err := EncodePNG(&png, im); err != nil {
		b.Fatal(err)
	}
	ppm := encodeNetpbm(im, false)
	dir := b.TempDir()
	files := map[string][]byte{"ppm": ppm, "png": png.Bytes()}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, "a."+name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("PPM %d bytes, PNG %d bytes", len(ppm), png.Len())
	out := int64(len(im.Pix))
	b.Run("copy", func(b *testing.B) {
		dst := make([]byte, len(im.Pix))
		b.SetBytes(out)
		for b.Loop() {
			copy(dst, ppm[len(ppm)-len(dst):])
		}
	})
	for _, name := range []string{"ppm", "png"} {
		data := files[name]
		b.Run(name+"/Decode", func(b *testing.B) {
			b.SetBytes(out)
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := Decode(data, name, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		path := filepath.Join(dir, "a."+name)
		b.Run(name+"/DecodeFile", func(b *testing.B) {
			b.SetBytes(out)
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := DecodeFile(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
