package jpegturbo

import (
	"bytes"
	"testing"
)

// withSegments inserts marker segments right after SOI.
func withSegments(jpg []byte, segs ...[]byte) []byte {
	out := append([]byte(nil), jpg[:2]...)
	for _, s := range segs {
		out = append(out, s...)
	}
	return append(out, jpg[2:]...)
}

func segment(marker byte, payload []byte) []byte {
	n := len(payload) + 2
	return append([]byte{0xff, marker, byte(n >> 8), byte(n)}, payload...)
}

func iccChunk(seq, count byte, data string) []byte {
	return segment(0xe2, append([]byte("ICC_PROFILE\x00"), append([]byte{seq, count}, data...)...))
}

// TestICCAndOrientation: the ICC profile is assembled from its numbered
// APP2 chunks as libjxl v0.12's ReadICCProfile does (inconsistent sets
// mean no profile), and the EXIF orientation tag is read from IFD0 in both
// byte orders; neither changes the pixels.
func TestICCAndOrientation(t *testing.T) {
	base := encodeBaseline(9, 7, encOpts{[]encComp{{1, 1, 1}}, true, -1}, func(ci, x, y int) int { return x * y * 3 })
	plain, err := Decode(base, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	exifII := segment(0xe1, []byte("Exif\x00\x00II*\x00\x08\x00\x00\x00\x01\x00\x12\x01\x03\x00\x01\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00\x00"))
	exifMM := segment(0xe1, []byte("Exif\x00\x00MM\x00*\x00\x00\x00\x08\x00\x01\x01\x12\x00\x03\x00\x00\x00\x01\x00\x03\x00\x00\x00\x00\x00\x00"))
	for _, c := range []struct {
		name   string
		segs   [][]byte
		icc    string
		orient int
	}{
		{"none", nil, "", 0},
		{"two chunks out of order", [][]byte{iccChunk(2, 2, "world"), iccChunk(1, 2, "hello ")}, "hello world", 0},
		{"missing chunk", [][]byte{iccChunk(1, 3, "a"), iccChunk(2, 3, "b")}, "", 0},
		{"duplicate chunk", [][]byte{iccChunk(1, 2, "a"), iccChunk(1, 2, "b")}, "", 0},
		{"empty chunk", [][]byte{iccChunk(1, 1, "")}, "", 0},
		{"exif little-endian", [][]byte{exifII}, "", 6},
		{"exif big-endian and icc", [][]byte{exifMM, iccChunk(1, 1, "p")}, "p", 3},
	} {
		im, err := Decode(withSegments(base, c.segs...), Limits{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(im.ICC) != c.icc || (c.icc == "" && im.ICC != nil) || im.Orientation != c.orient {
			t.Errorf("%s: ICC %q, orientation %d; want %q, %d", c.name, im.ICC, im.Orientation, c.icc, c.orient)
		}
		if !bytes.Equal(im.Pix, plain.Pix) {
			t.Errorf("%s: metadata changed the pixels", c.name)
		}
	}
}
