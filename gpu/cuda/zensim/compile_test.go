package zensim

import (
	"strconv"
	"strings"
	"testing"

	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
)

// The kernels compile with NVRTC alone, for sm_90 and compute_75, and
// every kernel the host looks up is an exported .entry.
func TestKernelsCompile(t *testing.T) {
	ptx := cudatest.KernelsCompile(t, "zensim", source(), cudatest.Names(newKernels().list()))
	// Doubles only where the sums want them: a double in a per-pixel
	// kernel would be a slip (a literal without f), and would change the
	// float32 arithmetic the CPU reference does.
	for _, name := range []string{"xyb", "down", "hblur", "vstats"} {
		if body := entryBody(ptx, name); body == "" || strings.Contains(body, ".f64") {
			t.Errorf("compute_75: kernel %s missing or computes in double", name)
		}
	}
	// Plain products stay unfused (mul.rn: --fmad=false is in effect).
	if body := entryBody(ptx, "vstats"); !strings.Contains(body, "mul.rn.f32") {
		t.Error("compute_75: vstats has no unfused product (mul.rn.f32): --fmad=false not in effect?")
	}
}

// entryBody is the PTX text of kernel name (from its .entry to the next).
func entryBody(ptx, name string) string {
	i := strings.Index(ptx, ".entry "+name+"(")
	if i < 0 {
		return ""
	}
	rest := ptx[i+1:]
	if j := strings.Index(rest, ".entry "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// The host's signature table (what launch.CheckArgs enforces at every
// launch) matches zensim.cu's declarations, kernel by kernel, and names
// every kernel the source exports; and the geometry the host launches
// with is the one the source is written for.
func TestSignaturesMatchSource(t *testing.T) {
	cudatest.CheckTable(t, kernelSource, newKernels().list())
	for def, v := range map[string]int{"BX": blockX, "BY": blockY, "HT": hblurThreads, "HR": hblurRows, "VT": vstatsThreads,
		"CT": chainThreads, "MT": mergeThreads, "NQ": nq, "NSUM": nsum, "STRIP": strip,
		"RADIUS": cpuz.BlurRadius, "DIAM": 2*cpuz.BlurRadius + 1, "CHUNK": cpuz.ChunkRows} {
		want := "#define " + def + " " + strconv.Itoa(v) + " "
		if !strings.Contains(kernelSource, want) {
			t.Errorf("zensim.cu does not say %q", want)
		}
	}
}
