// Package hostile builds the hostile and oversized inputs of issue #21 for
// tests in several packages (imageio, batch, cmd/zmscore): PNG files whose
// header claims more than their data holds, and huge but highly
// compressible PNGs written without ever holding their pixels in memory.
// Only tests import it.
package hostile

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
)

// chunk writes one PNG chunk with its CRC.
func chunk(w io.Writer, typ string, data []byte) error {
	var hd [8]byte
	binary.BigEndian.PutUint32(hd[:4], uint32(len(data)))
	copy(hd[4:], typ)
	crc := crc32.NewIEEE()
	crc.Write(hd[4:])
	crc.Write(data)
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc.Sum32())
	for _, b := range [][]byte{hd[:], data, tail[:]} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// ihdr is an IHDR payload: w×h, bit depth, colour type, no interlace.
func ihdr(w, h uint32, depth, ctype byte) []byte {
	b := make([]byte, 13)
	binary.BigEndian.PutUint32(b[0:], w)
	binary.BigEndian.PutUint32(b[4:], h)
	b[8], b[9] = depth, ctype
	return b
}

// ClaimingPNG returns a small, well-formed PNG (valid chunks and CRCs)
// whose IHDR claims w×h pixels of the given depth and colour type (6 =
// RGBA) but whose IDAT holds only the zlib stream of one short row: the
// "68-byte PNG claiming 32768×32768 RGBA16" of the issue.
func ClaimingPNG(w, h uint32, depth, ctype byte) []byte {
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	chunk(&buf, "IHDR", ihdr(w, h, depth, ctype))
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte{0, 0, 0, 0})
	zw.Close()
	chunk(&buf, "IDAT", z.Bytes())
	chunk(&buf, "IEND", nil)
	return buf.Bytes()
}

// WriteFlatPNG writes an 8-bit RGB PNG of w×h pixels, all of one grey
// level, to path, streaming the rows through zlib at its fastest level:
// 20000×20000 (1.2 GB of samples) makes a file of about 1.5 MB in a
// second or two and never holds more than one row in memory.
func WriteFlatPNG(path string, w, h int, level byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteString("\x89PNG\r\n\x1a\n"); err != nil {
		return err
	}
	if err := chunk(f, "IHDR", ihdr(uint32(w), uint32(h), 8, 2)); err != nil {
		return err
	}
	var z bytes.Buffer
	zw, err := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	if err != nil {
		return err
	}
	row := make([]byte, 1+3*w) // filter byte 0 (none), then samples
	for i := 1; i < len(row); i++ {
		row[i] = level
	}
	flush := func() error {
		if z.Len() == 0 {
			return nil
		}
		err := chunk(f, "IDAT", z.Bytes())
		z.Reset()
		return err
	}
	for y := 0; y < h; y++ {
		if _, err := zw.Write(row); err != nil {
			return err
		}
		if z.Len() >= 1<<20 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if err := chunk(f, "IEND", nil); err != nil {
		return err
	}
	return f.Close()
}

// PatchVP8Size rewrites the frame size of a simple lossy WebP (RIFF,
// WEBP, then a "VP8 " chunk) to w×h, keeping everything else: the "1.5 KB
// WebP patched to 16383²" of the issue. It returns nil when data is not
// such a file.
func PatchVP8Size(data []byte, w, h uint16) []byte {
	if len(data) < 30 || string(data[12:16]) != "VP8 " || !bytes.Equal(data[23:26], []byte{0x9d, 0x01, 0x2a}) {
		return nil
	}
	out := bytes.Clone(data)
	binary.LittleEndian.PutUint16(out[26:], w&0x3fff)
	binary.LittleEndian.PutUint16(out[28:], h&0x3fff)
	return out
}
