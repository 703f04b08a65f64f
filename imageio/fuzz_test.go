package imageio

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// FuzzDecode: any bytes give either a valid image agreeing with
// DecodeConfig or a typed *InputError; never a panic. Seeds: every file in
// testdata/imageio plus one PNG of each mode and the PNM seeds.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(shared.Testdata(f, "imageio", "*"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil && filepath.Ext(p) != ".md" {
			f.Add(b)
		}
	}
	for _, p := range pngCases() {
		f.Add(p.encode())
	}
	f.Add(hugePNG(100000, 100000))
	for _, s := range pnmSeeds() {
		f.Add(s)
	}
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8L"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeContract(t, data, "fuzz.bin")
	})
}

// TestFuzzSeedsMutated runs the fuzz contract on random mutations of the
// seeds (PNM ones included) in every plain `go test`, not only under
// -fuzz.
func TestFuzzSeedsMutated(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var seeds [][]byte
	for _, p := range testdataPaths(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	for _, p := range pngCases() {
		seeds = append(seeds, p.encode())
	}
	seeds = append(seeds, pnmSeeds()...)
	for i := 0; i < 3000; i++ {
		b := bytes.Clone(seeds[r.IntN(len(seeds))])
		for k := r.IntN(4) + 1; k > 0; k-- {
			switch r.IntN(3) {
			case 0:
				b[r.IntN(len(b))] = byte(r.IntN(256))
			case 1:
				b = b[:r.IntN(len(b))+1]
			default:
				i := r.IntN(len(b))
				b = append(b[:i:i], append([]byte{byte(r.IntN(256))}, b[i:]...)...)
			}
		}
		checkDecodeContract(t, b, "fuzz.bin")
	}
}
