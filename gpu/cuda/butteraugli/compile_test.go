package butteraugli

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
)

// The kernels compile with NVRTC alone (no GPU needed), to a CUBIN for
// sm_90 (H100/H200) and to PTX for compute_75, the oldest architecture the
// project claims; every kernel the host looks up is an exported .entry.
func TestKernelsCompile(t *testing.T) {
	for _, arch := range []string{"sm_90", "compute_75"} {
		img, cubin, err := cuda.Compile("butteraugli", source(), arch)
		if errors.Is(err, zenmetrics.ErrUnsupported) {
			if os.Getenv("ZENMETRICS_REQUIRE_CUDA") == "1" {
				t.Fatalf("NVRTC required: %v", err)
			}
			t.Skipf("no NVRTC here: %v", err)
		}
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if len(img) == 0 || cubin != (arch[:3] == "sm_") {
			t.Fatalf("%s: %d bytes, cubin %v", arch, len(img), cubin)
		}
		if !cubin {
			for _, k := range newKernels().list() {
				if !strings.Contains(string(img), ".entry "+k.name+"(") {
					t.Errorf("%s: no .entry %s in the PTX", arch, k.name)
				}
			}
		}
		t.Logf("%s: %d bytes", arch, len(img))
	}
}

// param is one parameter of a kernel as declared in butteraugli.cu.
type param struct {
	kind byte // 'p', 'i', 'f', 'd'
	name string
	out  bool // a pointer to non-const data (written)
}

var entryRE = regexp.MustCompile(`extern "C" __global__ void (\w+)\(([^)]*)\)`)

// signatures parses the kernels' parameter lists from the source.
func signatures(t testing.TB) map[string][]param {
	t.Helper()
	out := map[string][]param{}
	for _, m := range entryRE.FindAllStringSubmatch(kernelSource, -1) {
		var ps []param
		for _, a := range strings.Split(m[2], ",") {
			f := strings.Fields(strings.TrimSpace(a))
			if len(f) < 2 {
				t.Fatalf("kernel %s: cannot parse parameter %q", m[1], a)
			}
			name := strings.TrimLeft(f[len(f)-1], "*")
			typ := strings.Join(f[:len(f)-1], " ")
			p := param{name: name}
			switch {
			case strings.Contains(a, "*"):
				p.kind, p.out = 'p', !strings.HasPrefix(typ, "const")
			case typ == "int":
				p.kind = 'i'
			case typ == "float":
				p.kind = 'f'
			case typ == "double":
				p.kind = 'd'
			default:
				t.Fatalf("kernel %s: parameter %q of type %q", m[1], name, typ)
			}
			ps = append(ps, p)
		}
		out[m[1]] = ps
	}
	return out
}

// The host's signature table (what checkArgs enforces at every launch)
// matches butteraugli.cu's declarations, kernel by kernel, and names every
// kernel the source exports.
func TestSignaturesMatchSource(t *testing.T) {
	sigs := signatures(t)
	seen := map[string]bool{}
	for _, k := range newKernels().list() {
		ps, ok := sigs[k.name]
		if !ok {
			t.Errorf("kernel %s is not in butteraugli.cu", k.name)
			continue
		}
		seen[k.name] = true
		var s []byte
		for _, p := range ps {
			s = append(s, p.kind)
		}
		if string(s) != k.sig {
			t.Errorf("kernel %s: host signature %q, source %q", k.name, k.sig, s)
		}
	}
	for name := range sigs {
		if !seen[name] {
			t.Errorf("butteraugli.cu exports %s, which the host never loads", name)
		}
	}
	// The blur radii the templates are written for.
	want := map[string]int{"OPSIN": 2, "LF": 16, "HF": 7, "UHF": 3, "MASK": 6}
	for _, b := range blurs {
		if b.k.off != want[b.name] {
			t.Errorf("blur %s: radius %d, want %d", b.name, b.k.off, want[b.name])
		}
	}
}
