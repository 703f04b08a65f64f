package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvCache overrides the kernel cache directory; "off" disables the cache.
const EnvCache = "ZENMETRICS_CUDA_CACHE"

// cacheKey is everything that decides the bytes NVRTC produces and whether
// the driver will load them: the driver version (its JIT and loader), the
// device's compute capability, NVRTC's version, the options and the
// source. A change in any of them is a different file, so a stale binary
// is never loaded.
type cacheKey struct {
	Driver       int
	Major, Minor int
	NVRTC        string
	Options      []string
	Source       string
}

// name is the file name of the key: a SHA-256 over the fields, each
// length-prefixed so that no two keys collide by concatenation.
func (k cacheKey) name() string {
	h := sha256.New()
	put := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	put(fmt.Sprintf("driver=%d sm=%d.%d nvrtc=%s", k.Driver, k.Major, k.Minor, k.NVRTC))
	put(strings.Join(k.Options, "\x00"))
	put(k.Source)
	return hex.EncodeToString(h.Sum(nil)[:20]) + ".bin"
}

// cacheDir is where compiled kernels are kept: $ZENMETRICS_CUDA_CACHE, else
// the user cache directory's zenmetrics/cuda; "" when disabled or unknown.
func cacheDir(getenv func(string) string) string {
	switch d := getenv(EnvCache); d {
	case "off":
		return ""
	case "":
	default:
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "zenmetrics", "cuda")
}

// The cache file: magic, kind (0 PTX, 1 CUBIN), payload length, SHA-256 of
// the payload, payload. Anything that does not check out (a torn write
// from another tool, a truncated disk, a file from a future format) is a
// miss and gets rebuilt and overwritten.
var cacheMagic = []byte("ZMCUDA1\n")

const cacheHeader = 8 + 1 + 8 + 32

func encodeEntry(out compileOutput) []byte {
	b := make([]byte, cacheHeader+len(out.image))
	copy(b, cacheMagic)
	if out.cubin {
		b[8] = 1
	}
	binary.LittleEndian.PutUint64(b[9:], uint64(len(out.image)))
	sum := sha256.Sum256(out.image)
	copy(b[17:], sum[:])
	copy(b[cacheHeader:], out.image)
	return b
}

var errCorrupt = errors.New("cuda: corrupt cache entry")

func decodeEntry(b []byte) (compileOutput, error) {
	if len(b) < cacheHeader || !bytes.Equal(b[:8], cacheMagic) || b[8] > 1 {
		return compileOutput{}, errCorrupt
	}
	n := binary.LittleEndian.Uint64(b[9:])
	if n == 0 || n != uint64(len(b)-cacheHeader) {
		return compileOutput{}, errCorrupt
	}
	payload := b[cacheHeader:]
	if sum := sha256.Sum256(payload); !bytes.Equal(sum[:], b[17:cacheHeader]) {
		return compileOutput{}, errCorrupt
	}
	return compileOutput{image: payload, cubin: b[8] == 1}, nil
}

// cacheLoad reads a compiled kernel; ok is false on a miss or a corrupt
// entry.
func cacheLoad(dir string, k cacheKey) (compileOutput, bool) {
	if dir == "" {
		return compileOutput{}, false
	}
	b, err := os.ReadFile(filepath.Join(dir, k.name()))
	if err != nil || len(b) > 1<<30 {
		return compileOutput{}, false
	}
	out, err := decodeEntry(b)
	return out, err == nil
}

// cacheStore writes an entry atomically: a temporary file in the same
// directory, synced, then renamed over the name, so a reader sees either
// the old file, no file or the whole new one, even with several processes
// compiling at once.
func cacheStore(dir string, k cacheKey, out compileOutput) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(encodeEntry(out))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, k.name())); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
