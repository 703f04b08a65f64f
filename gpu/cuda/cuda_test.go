package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// Error mapping: the codes the ladder acts on reach the typed errors, and
// nothing else does.
func TestErrorMapping(t *testing.T) {
	cases := []struct {
		code              Result
		oom, lost, unsupp bool
	}{
		{ErrorOutOfMemory, true, false, false},
		{ErrorIllegalAddress, false, true, false},
		{ErrorLaunchFailed, false, true, false},
		{ErrorLaunchTimeout, false, true, false},
		{ErrorECCUncorrectable, false, true, false},
		{ErrorNoDevice, false, false, true},
		{ErrorInsufficientDrv, false, false, true},
		{ErrorStubLibrary, false, false, true},
		{ErrorInvalidValue, false, false, false},
		{ErrorLaunchResources, false, false, false},
	}
	for _, c := range cases {
		var err error = &Error{Func: "cuTest", Code: c.code}
		if got := errors.Is(err, zenmetrics.ErrOutOfMemory); got != c.oom {
			t.Errorf("%v: ErrOutOfMemory %v, want %v", c.code, got, c.oom)
		}
		if got := errors.Is(err, zenmetrics.ErrDeviceLost); got != c.lost {
			t.Errorf("%v: ErrDeviceLost %v, want %v", c.code, got, c.lost)
		}
		if got := errors.Is(err, zenmetrics.ErrUnsupported); got != c.unsupp {
			t.Errorf("%v: ErrUnsupported %v, want %v", c.code, got, c.unsupp)
		}
		if !errors.Is(err, ErrCUDA) || !strings.Contains(err.Error(), c.code.String()) {
			t.Errorf("%v: %q does not match ErrCUDA or name the code", c.code, err)
		}
	}
	// The enum values are cuda.h's (a few spot checks against the header).
	for code, want := range map[Result]int32{ErrorOutOfMemory: 2, ErrorNoDevice: 100, ErrorInvalidPTX: 218,
		ErrorIllegalAddress: 700, ErrorLaunchFailed: 719, ErrorUnknown: 999} {
		if int32(code) != want {
			t.Errorf("%v = %d, want %d", code, code, want)
		}
	}
	if s := Result(12345).String(); s != "CUresult(12345)" {
		t.Errorf("unknown code prints %q", s)
	}
	if !errors.Is(&NVRTCError{Code: NVRTCOutOfMemory}, zenmetrics.ErrOutOfMemory) {
		t.Error("NVRTC out of memory does not match ErrOutOfMemory")
	}
}

// The library names per OS, and the override being the only candidate.
func TestCandidates(t *testing.T) {
	none := func(string) string { return "" }
	if got := driverCandidates("linux", none); strings.Join(got, ",") != "libcuda.so.1,libcuda.so" {
		t.Errorf("linux driver candidates %v", got)
	}
	if got := driverCandidates("windows", none); strings.Join(got, ",") != "nvcuda.dll" {
		t.Errorf("windows driver candidates %v", got)
	}
	if got := driverCandidates("darwin", none); len(got) != 0 {
		t.Errorf("darwin driver candidates %v", got)
	}
	env := func(k string) string {
		return map[string]string{EnvDriverLib: "/x/libcuda.so.1", EnvNVRTCLib: "/y/libnvrtc.so", "CUDA_PATH": `C:\CUDA`}[k]
	}
	if got := driverCandidates("linux", env); len(got) != 1 || got[0] != "/x/libcuda.so.1" {
		t.Errorf("override: %v", got)
	}
	if got := nvrtcCandidates("linux", "amd64", env); len(got) != 1 || got[0] != "/y/libnvrtc.so" {
		t.Errorf("nvrtc override: %v", got)
	}
	lin := nvrtcCandidates("linux", "amd64", none)
	for _, want := range []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "/usr/local/cuda/lib64/libnvrtc.so.13",
		"/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.12"} {
		if !contains(lin, want) {
			t.Errorf("linux nvrtc candidates lack %s: %v", want, lin)
		}
	}
	if lin[0] != "libnvrtc.so.13" {
		t.Errorf("newest NVRTC not first: %v", lin)
	}
	win := nvrtcCandidates("windows", "amd64", func(k string) string {
		if k == "CUDA_PATH" {
			return `C:\CUDA`
		}
		return ""
	})
	for _, want := range []string{"nvrtc64_130_0.dll", "nvrtc64_120_0.dll", "nvrtc64_112_0.dll", `C:\CUDA\bin\x64\nvrtc64_130_0.dll`, `C:\CUDA\bin\nvrtc64_120_0.dll`} {
		if !contains(win, want) {
			t.Errorf("windows nvrtc candidates lack %s: %v", want, win)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// A library that is not there is a clean LoadError naming every path
// tried, matching ErrUnsupported (so `auto` carries on without CUDA).
func TestMissingLibrary(t *testing.T) {
	dir := t.TempDir()
	bogus := filepath.Join(dir, "libcuda.so.1")
	if err := os.WriteFile(bogus, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "absent", "libcuda.so.1")
	_, err := openDriver([]string{missing, bogus})
	if err == nil {
		t.Fatal("loaded a library that is not one")
	}
	var le *LoadError
	if !errors.As(err, &le) || !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Fatalf("%T %v: not a LoadError matching ErrUnsupported", err, err)
	}
	for _, p := range []string{missing, bogus, "CUDA driver"} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name %s", err, p)
		}
	}
	_, err = openNVRTC([]string{missing})
	if !errors.Is(err, zenmetrics.ErrUnsupported) || !strings.Contains(err.Error(), "NVRTC") {
		t.Errorf("nvrtc: %v", err)
	}
	if _, err := openDriver(nil); !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Errorf("no candidates: %v", err)
	}
}

// Cache keys change with every input, entries round-trip, and corrupt,
// truncated or foreign files are misses (then overwritten by a store).
func TestCache(t *testing.T) {
	base := cacheKey{Driver: 13000, Major: 9, Minor: 0, NVRTC: "13.0", Options: CompileOptions("sm_90"), Source: "kernel"}
	seen := map[string]string{base.name(): "base"}
	for what, k := range map[string]cacheKey{
		"driver": {Driver: 12080, Major: 9, Minor: 0, NVRTC: "13.0", Options: base.Options, Source: "kernel"},
		"arch":   {Driver: 13000, Major: 8, Minor: 0, NVRTC: "13.0", Options: base.Options, Source: "kernel"},
		"minor":  {Driver: 13000, Major: 9, Minor: 1, NVRTC: "13.0", Options: base.Options, Source: "kernel"},
		"nvrtc":  {Driver: 13000, Major: 9, Minor: 0, NVRTC: "12.8", Options: base.Options, Source: "kernel"},
		"opts":   {Driver: 13000, Major: 9, Minor: 0, NVRTC: "13.0", Options: CompileOptions("compute_90"), Source: "kernel"},
		"source": {Driver: 13000, Major: 9, Minor: 0, NVRTC: "13.0", Options: base.Options, Source: "kernel2"},
		"split":  {Driver: 13000, Major: 9, Minor: 0, NVRTC: "13.0", Options: base.Options[:len(base.Options)-1], Source: base.Options[len(base.Options)-1] + "kernel"},
	} {
		if prev, dup := seen[k.name()]; dup {
			t.Errorf("key changed in %s has the name of %s", what, prev)
		}
		seen[k.name()] = what
	}
	dir := t.TempDir()
	if _, ok := cacheLoad(dir, base); ok {
		t.Fatal("hit in an empty cache")
	}
	want := compileOutput{image: []byte("\x7fELF cubin bytes"), cubin: true}
	if err := cacheStore(dir, base, want); err != nil {
		t.Fatal(err)
	}
	got, ok := cacheLoad(dir, base)
	if !ok || string(got.image) != string(want.image) || !got.cubin {
		t.Fatalf("round trip: %v %q %v", ok, got.image, got.cubin)
	}
	path := filepath.Join(dir, base.name())
	good, _ := os.ReadFile(path)
	for what, b := range map[string][]byte{
		"truncated":   good[:len(good)-3],
		"flipped":     append(append([]byte(nil), good[:len(good)-1]...), good[len(good)-1]^1),
		"empty":       {},
		"foreign":     []byte("// PTX from somewhere else\n.version 8.0\n"),
		"header only": good[:cacheHeader],
		"bad kind":    append(append(append([]byte(nil), good[:8]...), 7), good[9:]...),
	} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := cacheLoad(dir, base); ok {
			t.Errorf("%s entry loaded", what)
		}
	}
	if err := cacheStore(dir, base, want); err != nil {
		t.Fatal(err)
	}
	if _, ok := cacheLoad(dir, base); !ok {
		t.Error("store over a corrupt entry did not repair it")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d files in the cache, want 1 (no temporary files left)", len(ents))
	}
	if d := cacheDir(func(k string) string { return map[string]string{EnvCache: "off"}[k] }); d != "" {
		t.Errorf("off: %q", d)
	}
	if d := cacheDir(func(k string) string { return map[string]string{EnvCache: "/c"}[k] }); d != "/c" {
		t.Errorf("override: %q", d)
	}
}

// The kernel parameter block: values first, then pointers to them, each
// value in its own 8-byte slot with C's little-endian low bytes.
func TestLaunchArgSizes(t *testing.T) {
	if unsafe.Sizeof(DevPtr(0)) != 8 || unsafe.Sizeof(Result(0)) != 4 {
		t.Fatal("CUdeviceptr must be 8 bytes and CUresult 4")
	}
	if g := Groups(1000, 128); g != 8 {
		t.Errorf("Groups(1000, 128) = %d", g)
	}
}

// The free-buffer cache: buckets, exact-size reuse, the cap, drain.
func TestMemCache(t *testing.T) {
	for size, want := range map[int64]int64{1: 64 << 10, 64 << 10: 64 << 10, 64<<10 + 1: 128 << 10,
		2 << 20: 2 << 20, 2<<20 + 1: 4 << 20, 100<<20 + 5: 102 << 20} {
		if got := bucket(size); got != want {
			t.Errorf("bucket(%d) = %d, want %d", size, got, want)
		}
	}
	c := memCache{cap: 10 << 20}
	if p := c.take(4 << 20); p != 0 {
		t.Fatal("take from an empty cache")
	}
	if !c.put(0x1000, 4<<20) || !c.put(0x2000, 4<<20) || c.put(0x3000, 4<<20) {
		t.Fatal("cap of 10 MiB: two 4 MiB buffers fit, a third does not")
	}
	if c.cached() != 8<<20 {
		t.Errorf("cached %d", c.cached())
	}
	if p := c.take(2 << 20); p != 0 {
		t.Error("a 2 MiB request took a 4 MiB buffer")
	}
	if p := c.take(4 << 20); p != 0x2000 {
		t.Errorf("take = %#x, want the last put", p)
	}
	if d := c.drain(); len(d) != 1 || d[0] != 0x1000 || c.cached() != 0 {
		t.Errorf("drain %v, cached %d", d, c.cached())
	}
}

// AllocSize is what the memory estimates sum, so it must be exactly the
// size Device.Alloc hands the cache and the driver: the cache's bucket of
// the request (4 bytes at least), for sizes around every bucket edge.
// Requests that AllocSize maps together must share a cache entry, and
// AllocSizes must be their plain sum; no device is needed.
func TestAllocSize(t *testing.T) {
	var sizes []int64
	for _, edge := range []int64{0, 4, 64 << 10, 128 << 10, 2 << 20, 4 << 20, 100 << 20, 1 << 32} {
		for d := int64(-3); d <= 3; d++ {
			if n := edge + d; n >= 0 {
				sizes = append(sizes, n)
			}
		}
	}
	for n := int64(0); n < 8<<20; n += 12345 {
		sizes = append(sizes, n)
	}
	var sum int64
	for _, n := range sizes {
		got := AllocSize(n)
		if want := bucket(max(n, 4)); got != want {
			t.Fatalf("AllocSize(%d) = %d, the cache's bucket is %d", n, got, want)
		}
		if got < max(n, 4) {
			t.Fatalf("AllocSize(%d) = %d is smaller than the request", n, got)
		}
		// A buffer put back under its AllocSize serves any request with
		// the same AllocSize (what Device.Alloc asks the cache for).
		c := memCache{cap: 1 << 40}
		if !c.put(0x1000, got) || c.take(AllocSize(got)) != 0x1000 {
			t.Fatalf("AllocSize(%d) = %d is not a fixed point of the cache's buckets", n, got)
		}
		sum += got
	}
	if got := AllocSizes(sizes); got != sum {
		t.Errorf("AllocSizes = %d, want the sum %d", got, sum)
	}
	if AllocSizes(nil) != 0 {
		t.Error("AllocSizes(nil) != 0")
	}
}

// CheckFits refuses an image past a metric's kernels' indexing as out of
// memory for the whole estimate, before asking the device anything (the
// device here has no driver behind it), with the detail the metrics gave
// before they shared it.
func TestCheckFitsRefusal(t *testing.T) {
	b := &Backend{dev: &Device{info: DeviceInfo{Name: "none"}}}
	err := b.CheckFits("DSSIM", 60000, 50000, false, 123)
	var oom *zenmetrics.OutOfMemoryError
	if !errors.Is(err, zenmetrics.ErrOutOfMemory) || !errors.As(err, &oom) {
		t.Fatalf("got %v, want an OutOfMemoryError", err)
	}
	if oom.Requested != 123 || oom.Free != -1 || oom.Backend != "cuda:none" ||
		oom.Detail != "a 60000x50000 image exceeds the DSSIM kernels' indexing" {
		t.Errorf("got %+v", oom)
	}
}
