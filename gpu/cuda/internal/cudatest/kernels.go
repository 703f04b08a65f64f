package cudatest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// KernelsCompile checks that a metric's kernels compile with NVRTC alone
// (no GPU needed), to a CUBIN for sm_90 (H100/H200) and to PTX for
// compute_75, the oldest architecture the project claims, and that every
// kernel the host looks up (entries) is an exported .entry of the PTX,
// which it returns for the metric's own checks. Without NVRTC it skips,
// or fails under ZENMETRICS_REQUIRE_CUDA=1.
func KernelsCompile(t *testing.T, name, src string, entries []string) (ptx string) {
	t.Helper()
	for _, arch := range []string{"sm_90", "compute_75"} {
		img, cubin, err := cuda.Compile(name, src, arch)
		if errors.Is(err, zenmetrics.ErrUnsupported) {
			if Required() {
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
			ptx = string(img)
			for _, e := range entries {
				if !strings.Contains(ptx, ".entry "+e+"(") {
					t.Errorf("%s: no .entry %s in the PTX", arch, e)
				}
			}
		}
		t.Logf("%s: %d bytes", arch, len(img))
	}
	return ptx
}

// Names are the kernels' names of a table, for KernelsCompile.
func Names(ks []*launch.Kernel) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.Name
	}
	return out
}

// Signatures parses the kernels' parameter lists from a .cu source.
func Signatures(t testing.TB, src string) map[string][]cudaemu.Param {
	t.Helper()
	sigs, err := cudaemu.Signatures(src)
	if err != nil {
		t.Fatal(err)
	}
	return sigs
}

// CheckTable reports every difference between the host's kernel table
// (what launch.CheckArgs enforces at every launch) and the source's
// declarations (cudaemu.CheckTable).
func CheckTable(t testing.TB, src string, ks []*launch.Kernel) {
	t.Helper()
	for _, err := range cudaemu.CheckTable(src, ks) {
		t.Error(err)
	}
}

// Launches checks recorded launches against the kernels' declarations:
// the checks that hold for every metric (argument count, block shape, no
// nil or repeated buffer, each buffer large enough, no input read before
// some earlier launch or upload wrote it). A metric's test embeds it and
// adds its own checks between Begin and Buffers.
type Launches struct {
	T       *testing.T
	Sigs    map[string][]cudaemu.Param
	Written map[cuda.DevPtr]bool // buffers holding data
	// Block is the block shape each kernel is written for.
	Block func(kernel string) cuda.Dim3
	// Needs is the bytes a kernel may touch through one pointer
	// parameter, given the launch's int arguments by parameter name.
	Needs func(kernel, param string, ints map[string]int) int64
	// Unread, when set, reports a pointer parameter the launch does not
	// read (it may be nil).
	Unread func(kernel, param string, ints map[string]int) bool
	// ReadsOut, when set, reports an output the kernel also reads (it
	// must hold data already).
	ReadsOut func(kernel, param string, ints map[string]int) bool
}

// Launch is one recorded launch as Begin reads it: its label for
// messages and its int and double arguments by parameter name.
type Launch struct {
	cudaemu.Launch
	Name string
	Ints map[string]int
	Dbl  map[string]float64
}

// Begin checks launch i's argument count (fatal: nothing else can be
// read) and block shape, and returns it with its arguments by name.
func (c *Launches) Begin(i int, l cudaemu.Launch) Launch {
	ps := c.Sigs[l.K.Name]
	a := Launch{Launch: l, Name: fmt.Sprintf("launch %d (%s)", i, l.K.Name), Ints: map[string]int{}, Dbl: map[string]float64{}}
	if len(ps) != len(l.Args) {
		c.T.Fatalf("%s: %d arguments for %d parameters", a.Name, len(l.Args), len(ps))
	}
	for j, pr := range ps {
		switch v := l.Args[j].(type) {
		case int:
			a.Ints[pr.Name] = v
		case float64:
			a.Dbl[pr.Name] = v
		}
	}
	if want := c.Block(l.K.Name); l.Block != want {
		c.T.Errorf("%s: block %+v, the kernel is written for %+v", a.Name, l.Block, want)
	}
	return a
}

// Cover checks that the launch's grid covers w×h with no block starting
// outside it, in one layer.
func (c *Launches) Cover(a Launch, w, h int) {
	g, b := a.Grid, a.Block
	if gx, gy := int(g.X*b.X), int(g.Y*b.Y); gx < w || gy < h || gx-w >= int(b.X) || gy-h >= int(b.Y) || g.Z != 1 {
		c.T.Errorf("%s: grid %+v × block %+v does not fit %d×%d", a.Name, g, b, w, h)
	}
}

// Buffers checks the launch's pointer arguments, then records its
// outputs as written.
func (c *Launches) Buffers(a Launch) {
	t, kn := c.T, a.K.Name
	ps := c.Sigs[kn]
	seen := map[cuda.DevPtr]string{}
	for j, pr := range ps {
		if pr.Kind != 'p' {
			continue
		}
		buf, _ := a.Args[j].(*cuda.Buffer)
		if buf == nil {
			if c.Unread == nil || !c.Unread(kn, pr.Name, a.Ints) {
				t.Errorf("%s: %s is nil", a.Name, pr.Name)
			}
			continue
		}
		if o, dup := seen[buf.Ptr]; dup {
			t.Errorf("%s: the same buffer as %s and %s", a.Name, o, pr.Name)
		}
		seen[buf.Ptr] = pr.Name
		if need := c.Needs(kn, pr.Name, a.Ints); buf.Size < need {
			t.Errorf("%s: %s holds %d bytes, the kernel reaches %d", a.Name, pr.Name, buf.Size, need)
		}
		readsOut := c.ReadsOut != nil && c.ReadsOut(kn, pr.Name, a.Ints)
		if (!pr.Out || readsOut) && !c.Written[buf.Ptr] {
			t.Errorf("%s: %s is read before anything wrote it", a.Name, pr.Name)
		}
	}
	for j, pr := range ps {
		if buf, _ := a.Args[j].(*cuda.Buffer); buf != nil && pr.Out {
			c.Written[buf.Ptr] = true
		}
	}
}
