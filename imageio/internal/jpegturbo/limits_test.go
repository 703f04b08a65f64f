package jpegturbo

import (
	"errors"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// TestShortFileRefusedBeforeAllocation: a few hundred bytes claiming a
// 60000×60000 Huffman-coded image cannot hold its first scan; Decode says
// so before allocating coefficient buffers (which would be ~20 GB), and
// the pixel limit refuses it even earlier when one is set.
func TestShortFileRefusedBeforeAllocation(t *testing.T) {
	f := func(ci, x, y int) int { return 128 }
	data := encodeBaseline(16, 16, encOpts{[]encComp{{1, 1, 1}, {2, 1, 1}, {3, 1, 1}}, true, -1}, f)
	// Patch the SOF to 60000×60000.
	for i := 0; i+9 < len(data); i++ {
		if data[i] == 0xff && data[i+1] == 0xc0 {
			data[i+5], data[i+6], data[i+7], data[i+8] = 0xea, 0x60, 0xea, 0x60
			break
		}
	}
	cfg, err := DecodeConfig(data)
	if err != nil || cfg.Width != 60000 || cfg.Height != 60000 {
		t.Fatalf("DecodeConfig %+v, %v", cfg, err)
	}
	if _, err := Decode(data, Limits{}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Fatalf("short file: %v, want ErrBadInput", err)
	}
	if _, err := Decode(data, Limits{MaxPixels: 1 << 20}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Fatalf("over the limit: %v, want ErrBadInput", err)
	}
}
