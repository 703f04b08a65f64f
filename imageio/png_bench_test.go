package imageio

import (
	"bytes"
	"compress/zlib"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kzlib "github.com/klauspost/compress/zlib"

	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// BenchmarkPNGDecode decodes the corpus's 5 MP photos (the dandelions
// group) three ways in one run: image/png alone (png.Decode, no
// conversion), imageio's former path (image/png then the repack to the
// zenmetrics layout, decodePNGStd) and decodePNG. MB/s counts the decoded
// image's bytes; cpu-ns/op is the process's CPU time per decode (GC
// included), steadier than ns/op on a loaded machine. Compare with -cpu 1;
// BENCHMARKS.md has the table.
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
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := png.Decode(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("std-path/"+name, func(b *testing.B) {
			b.SetBytes(out)
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := decodePNGStd(data, hd); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("imageio/"+name, func(b *testing.B) {
			b.SetBytes(out)
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := decodePNG(data, hd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU starts measuring the process's CPU time; the function it
// returns reports it per op.
func reportCPU(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		if end, ok2 := processCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// BenchmarkPNGInflate inflates the IDAT stream of the corpus's 5 MP
// reference photo three ways in one run: pngInflate (decodePNG's),
// klauspost/compress's zlib and compress/zlib (image/png's), each into a
// buffer of the stream's full size. It shows how much of a decode is
// inflate, and why decodePNG does not use a streaming inflater.
func BenchmarkPNGInflate(b *testing.B) {
	path := filepath.Join(shared.Dir(b, "corpus", "images"), "dandelions__ref.png")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Skip(err)
	}
	hd, err := readHeader(data)
	if err != nil {
		b.Fatal(err)
	}
	f, err := walkPNG(data, hd.png)
	if err != nil {
		b.Fatal(err)
	}
	d, err := newPNGRows(&f, hd.pf)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]byte, d.rawSize(hd.png.interlace != 0))
	var joined []byte
	for run := f.idat; ; {
		c, ok := run.next()
		if !ok {
			break
		}
		joined = append(joined, c...)
	}
	b.Run("pngInflate", func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		defer reportCPU(b)()
		for b.Loop() {
			run := f.idat
			if err := pngInflate(&run, out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("klauspost", func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		defer reportCPU(b)()
		for b.Loop() {
			z, err := kzlib.NewReader(bytes.NewReader(joined))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(z, out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compress-zlib", func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		defer reportCPU(b)()
		for b.Loop() {
			z, err := zlib.NewReader(bytes.NewReader(joined))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(z, out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
