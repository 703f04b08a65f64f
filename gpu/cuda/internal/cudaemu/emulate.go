package cudaemu

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
)

// EnvEmulate opts in to the CPU emulation of the kernels (it needs g++
// and takes seconds per image pair).
const EnvEmulate = "ZENMETRICS_CUDA_EMULATE"

// Emulator is a metric's kernels compiled for the CPU: the host C++
// compiler (g++, C++20, no contraction of multiply-adds, as NVRTC's
// --fmad=false) builds the .cu source with a shim (CUDA's built-in
// variables and vector types, __syncthreads as a barrier over one OS
// thread per CUDA thread, blocks one after another) and a replay loop
// that reads a script of buffers, uploads, launches and dumps. Device
// memory starts as NaN bytes (0xff), so a read of anything no kernel
// wrote shows; a block whose threads reach different numbers of
// __syncthreads is reported.
type Emulator struct{ bin, dir string }

// Build compiles src (the complete CUDA source: generated constants and
// kernels). It skips t unless ZENMETRICS_CUDA_EMULATE=1 and g++ is found.
func Build(t testing.TB, src string) *Emulator {
	t.Helper()
	if os.Getenv(EnvEmulate) != "1" {
		t.Skipf("set %s=1 (needs g++) to run the kernels on the CPU", EnvEmulate)
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skipf("no g++: %v", err)
	}
	prog, err := Program(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := &Emulator{bin: filepath.Join(dir, "emu"), dir: dir}
	cpp := filepath.Join(dir, "emu.cpp")
	if err := os.WriteFile(cpp, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gxx, "-O2", "-std=c++20", "-ffp-contract=off", "-pthread", "-o", e.bin, cpp).CombinedOutput()
	if err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	return e
}

// Program is the C++ source: the shim, src and a replay loop with one
// call wrapper per exported kernel of src.
func Program(src string) (string, error) {
	var b strings.Builder
	b.WriteString(shim)
	b.WriteString(src)
	b.WriteString("\nstatic void call(const std::string& name, Arg* a) {\n")
	for _, m := range entryRE.FindAllStringSubmatch(src, -1) {
		var args []string
		for i, p := range strings.Split(m[2], ",") {
			f := strings.Fields(strings.TrimSpace(p))
			if len(f) < 2 {
				return "", fmt.Errorf("kernel %s: parameter %q", m[1], p)
			}
			name := f[len(f)-1]
			typ := strings.Join(f[:len(f)-1], " ")
			for strings.HasPrefix(name, "*") {
				typ += "*"
				name = name[1:]
			}
			switch {
			case strings.Contains(typ, "*"):
				args = append(args, fmt.Sprintf("(%s)a[%d].p", typ, i))
			case typ == "int":
				args = append(args, fmt.Sprintf("a[%d].i", i))
			case typ == "float":
				args = append(args, fmt.Sprintf("a[%d].f", i))
			case typ == "double":
				args = append(args, fmt.Sprintf("a[%d].d", i))
			default:
				return "", fmt.Errorf("kernel %s: parameter type %q", m[1], typ)
			}
		}
		fmt.Fprintf(&b, "  if (name == %q) { %s(%s); return; }\n", m[1], m[1], strings.Join(args, ", "))
	}
	b.WriteString("  fail(\"unknown kernel \" + name);\n}\n")
	b.WriteString(replayMain)
	return b.String(), nil
}

// Session is one replay: its buffers, then uploads, launches and dumps in
// the order they are added, run by Run.
type Session struct {
	t      testing.TB
	e      *Emulator
	dir    string
	idx    map[cuda.DevPtr]int
	sizes  []int64
	script strings.Builder
	files  int
	dumps  []string
}

// Session starts a replay over bufs (every buffer the launches name; fake
// ones from FakeAlloc do).
func (e *Emulator) Session(t testing.TB, bufs []*cuda.Buffer) *Session {
	t.Helper()
	dir, err := os.MkdirTemp(e.dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{t: t, e: e, dir: dir, idx: map[cuda.DevPtr]int{}}
	fmt.Fprintf(&s.script, "buffers %d\n", len(bufs))
	for i, b := range bufs {
		s.idx[b.Ptr] = i
		s.sizes = append(s.sizes, b.Size)
		fmt.Fprintf(&s.script, "%d\n", b.Size)
	}
	return s
}

func (s *Session) index(b *cuda.Buffer) int {
	i, ok := s.idx[b.Ptr]
	if !ok {
		s.t.Fatalf("cudaemu: buffer %#x is not in the session", b.Ptr)
	}
	return i
}

// view is the session buffer that holds b and b's offset in it: a launch
// may name a view into a buffer (a Buffer whose Ptr lies inside one, as
// strips pass a map's window), which the device takes as a plain pointer.
func (s *Session) view(b *cuda.Buffer) (int, int64) {
	if i, ok := s.idx[b.Ptr]; ok {
		return i, 0
	}
	for p, i := range s.idx {
		if b.Ptr > p && int64(b.Ptr-p)+b.Size <= s.sizes[i] {
			return i, int64(b.Ptr - p)
		}
	}
	s.t.Fatalf("cudaemu: buffer %#x (%d bytes) is not in the session", b.Ptr, b.Size)
	return 0, 0
}

// Upload copies data into b (from offset 0) at this point of the replay.
func (s *Session) Upload(b *cuda.Buffer, data []byte) {
	s.files++
	f := filepath.Join(s.dir, fmt.Sprintf("in%d.bin", s.files))
	if err := os.WriteFile(f, data, 0o644); err != nil {
		s.t.Fatal(err)
	}
	fmt.Fprintf(&s.script, "upload %d %d %s\n", s.index(b), len(data), f)
}

// Replay adds recorded launches.
func (s *Session) Replay(ls []Launch) {
	for _, l := range ls {
		fmt.Fprintf(&s.script, "launch %s %d %d %d %d %d %d %d", l.K.Name, l.Grid.X, l.Grid.Y, l.Grid.Z,
			l.Block.X, l.Block.Y, l.Block.Z, len(l.Args))
		for _, a := range l.Args {
			switch v := a.(type) {
			case *cuda.Buffer:
				if v == nil {
					s.script.WriteString(" n")
				} else {
					i, off := s.view(v)
					fmt.Fprintf(&s.script, " p%d+%d", i, off)
				}
			case int:
				fmt.Fprintf(&s.script, " i%d", v)
			case float32:
				fmt.Fprintf(&s.script, " f%d", math.Float32bits(v))
			case float64:
				fmt.Fprintf(&s.script, " d%d", math.Float64bits(v))
			default:
				s.t.Fatalf("cudaemu: launch %s: argument %T", l.K.Name, a)
			}
		}
		s.script.WriteString("\n")
	}
}

// Dump reads n bytes of b at this point of the replay; Run returns them
// at the index Dump returns.
func (s *Session) Dump(b *cuda.Buffer, n int64) int {
	f := filepath.Join(s.dir, fmt.Sprintf("out%d.bin", len(s.dumps)))
	fmt.Fprintf(&s.script, "dump %d %d %s\n", s.index(b), n, f)
	s.dumps = append(s.dumps, f)
	return len(s.dumps) - 1
}

// Run replays the script and returns the dumps. Anything the emulator
// prints (an out-of-range transfer, unbalanced __syncthreads) fails t.
func (s *Session) Run() [][]byte {
	s.t.Helper()
	sf := filepath.Join(s.dir, "script.txt")
	if err := os.WriteFile(sf, []byte(s.script.String()), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if out, err := exec.Command(s.e.bin, sf).CombinedOutput(); err != nil || len(out) > 0 {
		s.t.Fatalf("emulator: %v\n%s", err, out)
	}
	res := make([][]byte, len(s.dumps))
	for i, f := range s.dumps {
		b, err := os.ReadFile(f)
		if err != nil {
			s.t.Fatal(err)
		}
		res[i] = b
	}
	return res
}
