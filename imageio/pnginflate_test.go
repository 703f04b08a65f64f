package imageio

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"hash/adler32"
	"io"
	"math/rand/v2"
	"testing"
)

// chunkList is a chunkSource over payloads in memory.
type chunkList [][]byte

func (c *chunkList) next() ([]byte, bool) {
	if len(*c) == 0 {
		return nil, false
	}
	p := (*c)[0]
	*c = (*c)[1:]
	return p, true
}

// splitChunks cuts b into IDAT-like payloads at random places (some empty).
func splitChunks(r *rand.Rand, b []byte) *chunkList {
	var out chunkList
	for len(b) > 0 {
		n := min(len(b), r.IntN(3)*r.IntN(5000))
		out = append(out, b[:n])
		b = b[n:]
	}
	return &out
}

// zlibCases compresses data that exercises every block type and code:
// random bytes (stored or literal-heavy), short-period patterns (overlapping
// matches of distance 1-8), long repeats (distances up to 32 KiB) and
// smooth ramps, at every compression level and Huffman-only.
func zlibCases(r *rand.Rand) (raws, streams [][]byte) {
	gen := func(kind, n int) []byte {
		b := make([]byte, n)
		switch kind {
		case 0:
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
		case 1:
			p := 1 + r.IntN(8)
			for i := range b {
				if i < p {
					b[i] = byte(r.IntN(256))
				} else {
					b[i] = b[i-p]
				}
				if r.IntN(200) == 0 {
					b[i] = byte(r.IntN(256))
				}
			}
		case 2:
			for i := range b {
				if i >= 20008 && r.IntN(4) != 0 {
					b[i] = b[i-20000-r.IntN(8)]
				} else {
					b[i] = byte(r.IntN(16))
				}
			}
		default:
			for i := range b {
				b[i] = byte(i/7 + r.IntN(3))
			}
		}
		return b
	}
	for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, 3, zlib.DefaultCompression, zlib.BestCompression, zlib.HuffmanOnly} {
		for kind := 0; kind < 4; kind++ {
			for _, n := range []int{1, 2, 100, 4096, 70000, 200000} {
				raw := gen(kind, n)
				var z bytes.Buffer
				w, _ := zlib.NewWriterLevel(&z, level)
				w.Write(raw)
				w.Close()
				raws = append(raws, raw)
				streams = append(streams, z.Bytes())
			}
		}
	}
	return raws, streams
}

// TestInflateMatchesZlib: every stream decodes to the exact bytes
// compress/zlib wrote (tolerance 0), however the stream is split into
// chunks; one byte more or less of expected output is refused.
func TestInflateMatchesZlib(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	raws, streams := zlibCases(r)
	for i, raw := range raws {
		out := make([]byte, len(raw))
		if err := pngInflate(splitChunks(r, streams[i]), out); err != nil {
			t.Fatalf("case %d (%d bytes): %v", i, len(raw), err)
		}
		if !bytes.Equal(out, raw) {
			t.Fatalf("case %d (%d bytes): output differs", i, len(raw))
		}
		if err := pngInflate(&chunkList{streams[i]}, make([]byte, len(raw)+1)); err == nil {
			t.Fatalf("case %d: accepted a stream one byte short", i)
		}
		if err := pngInflate(&chunkList{streams[i]}, make([]byte, len(raw)-1)); err == nil {
			t.Fatalf("case %d: accepted a stream one byte long", i)
		}
	}
}

// TestInflateRawBlocks hand-builds zlib headers compress/zlib's writer
// never emits: a preset-dictionary flag with the empty dictionary's id
// (accepted by compress/zlib) or another id, a failing header check, a
// 64 KiB window and a reserved block type (refused). compress/zlib is the
// referee of every case.
func TestInflateRawBlocks(t *testing.T) {
	data := []byte("abcabcabcabcabcabc")
	var def bytes.Buffer
	fw, _ := flate.NewWriter(&def, flate.BestSpeed)
	fw.Write(data)
	fw.Close()
	adler := binary.BigEndian.AppendUint32(nil, adler32.Checksum(data))
	dict := func(id byte) []byte {
		return append(append([]byte{0x78, 0xbb, 0, 0, 0, id}, def.Bytes()...), adler...)
	}
	for _, c := range []struct {
		name   string
		stream []byte
		ok     bool
	}{
		{"plain", append(append([]byte{0x78, 0x01}, def.Bytes()...), adler...), true},
		{"dict id 1", dict(1), true},
		{"dict id 2", dict(2), false},
		{"bad check", append(append([]byte{0x78, 0x02}, def.Bytes()...), adler...), false},
		{"window 64K", append(append([]byte{0x88, 0x1c}, def.Bytes()...), adler...), false},
		{"reserved block", []byte{0x78, 0x01, 0x07, 0, 0, 0, 0}, false},
	} {
		out := make([]byte, 18)
		err := pngInflate(&chunkList{c.stream}, out)
		// compress/zlib is the referee.
		zr, zerr := zlib.NewReader(bytes.NewReader(c.stream))
		if zerr == nil {
			var got bytes.Buffer
			_, zerr = io.Copy(&got, zr)
		}
		if (err == nil) != (zerr == nil) || (err == nil) != c.ok {
			t.Errorf("%s: pngInflate %v, compress/zlib %v, want ok=%v", c.name, err, zerr, c.ok)
		}
		if err == nil && !bytes.Equal(out, data) {
			t.Errorf("%s: wrong output", c.name)
		}
	}
}

// FuzzInflateAgainstZlib: on any stream, pngInflate into a buffer of the
// size compress/zlib produces either gives the same bytes or both refuse;
// decoding into one byte more must fail.
func FuzzInflateAgainstZlib(f *testing.F) {
	r := rand.New(rand.NewPCG(23, 24))
	_, streams := zlibCases(r)
	for i, s := range streams {
		if len(s) < 3000 && i%3 == 0 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		zr, err := zlib.NewReader(bytes.NewReader(stream))
		var want []byte
		if err == nil {
			want, err = io.ReadAll(io.LimitReader(zr, 1<<20))
		}
		n := len(want)
		out := make([]byte, n)
		got := pngInflate(&chunkList{stream}, out)
		if err == nil && got != nil {
			t.Fatalf("compress/zlib decodes %d bytes, pngInflate: %v", n, got)
		}
		if err == nil && !bytes.Equal(out, want) {
			t.Fatal("outputs differ")
		}
		if err != nil && got == nil && n < 1<<20 {
			t.Fatalf("pngInflate decoded what compress/zlib refuses (%v)", err)
		}
	})
}
