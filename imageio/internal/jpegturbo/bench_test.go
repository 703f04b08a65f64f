package jpegturbo

import (
	"bytes"
	"image/jpeg"
	"os/exec"
	"sync"
	"testing"
)

// bench12MP makes a 4000×3000 photo by upscaling a corpus photo (bilinear)
// and encodes it with cjpeg at quality 85 and the given sampling.
func bench12MP(b *testing.B, sampling string) []byte {
	b.Helper()
	if _, err := exec.LookPath("cjpeg"); err != nil {
		b.Skip("cjpeg not found")
	}
	srcOnce.Do(func() {
		paths := corpusPhotos(b)
		p := photoPPM(b, paths[0])
		w, h, ch, pix := parsePNM(b, p)
		if ch != 3 {
			b.Skip("first corpus photo is not RGB")
		}
		const W, H = 4000, 3000
		out := make([]byte, W*H*3)
		for y := 0; y < H; y++ {
			fy := float64(y) * float64(h-1) / float64(H-1)
			y0 := int(fy)
			y1 := min(y0+1, h-1)
			wy := fy - float64(y0)
			for x := 0; x < W; x++ {
				fx := float64(x) * float64(w-1) / float64(W-1)
				x0 := int(fx)
				x1 := min(x0+1, w-1)
				wx := fx - float64(x0)
				for c := 0; c < 3; c++ {
					a := float64(pix[(y0*w+x0)*3+c])*(1-wx) + float64(pix[(y0*w+x1)*3+c])*wx
					bb := float64(pix[(y1*w+x0)*3+c])*(1-wx) + float64(pix[(y1*w+x1)*3+c])*wx
					out[(y*W+x)*3+c] = byte(a*(1-wy) + bb*wy + 0.5)
				}
			}
		}
		srcPPM = ppm(W, H, 3, out)
	})
	return run(b, srcPPM, "cjpeg", "-quality", "85", "-sample", sampling)
}

var (
	srcOnce sync.Once
	srcPPM  []byte
)

// BenchmarkDecode12MP decodes the same 12 MP file with this package and
// with Go's image/jpeg, side by side. image/jpeg stops at planar Y'CbCr
// (no upsampling, no RGB); this package returns interleaved RGB.
func BenchmarkDecode12MP(b *testing.B) {
	for _, s := range []struct{ name, sampling string }{{"420", "2x2"}, {"444", "1x1"}} {
		var data []byte
		b.Run(s.name+"/jpegturbo", func(b *testing.B) {
			if data == nil {
				data = bench12MP(b, s.sampling)
			}
			b.SetBytes(4000 * 3000 * 3)
			for i := 0; i < b.N; i++ {
				if _, err := Decode(data, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/image_jpeg", func(b *testing.B) {
			if data == nil {
				data = bench12MP(b, s.sampling)
			}
			b.SetBytes(4000 * 3000 * 3)
			for i := 0; i < b.N; i++ {
				if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
