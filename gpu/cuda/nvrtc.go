package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"
)

// nvrtcAPI holds NVRTC's entry points (nvrtc.h).
type nvrtcAPI struct {
	path          string
	version       func(major, minor *int32) NVRTCResult
	createProgram func(p *uintptr, src, name string, nh int32, headers, names unsafe.Pointer) NVRTCResult
	compile       func(p uintptr, nopt int32, opts unsafe.Pointer) NVRTCResult
	logSize       func(p uintptr, n *uint64) NVRTCResult
	log           func(p uintptr, buf *byte) NVRTCResult
	ptxSize       func(p uintptr, n *uint64) NVRTCResult
	ptx           func(p uintptr, buf *byte) NVRTCResult
	cubinSize     func(p uintptr, n *uint64) NVRTCResult
	cubin         func(p uintptr, buf *byte) NVRTCResult
	destroy       func(p *uintptr) NVRTCResult
}

func (n *nvrtcAPI) symbols() []struct {
	name string
	fn   any
} {
	return []struct {
		name string
		fn   any
	}{
		{"nvrtcVersion", &n.version}, {"nvrtcCreateProgram", &n.createProgram},
		{"nvrtcCompileProgram", &n.compile}, {"nvrtcGetProgramLogSize", &n.logSize},
		{"nvrtcGetProgramLog", &n.log}, {"nvrtcGetPTXSize", &n.ptxSize}, {"nvrtcGetPTX", &n.ptx},
		{"nvrtcGetCUBINSize", &n.cubinSize}, {"nvrtcGetCUBIN", &n.cubin},
		{"nvrtcDestroyProgram", &n.destroy},
	}
}

var (
	nvrtcOnce sync.Once
	nvrtcLib  *nvrtcAPI
	nvrtcErr  error
)

// loadNVRTC opens NVRTC once per process. Only needed on a cache miss: a
// machine with the driver but no toolkit still runs kernels compiled
// earlier (see cache.go).
func loadNVRTC() (*nvrtcAPI, error) {
	nvrtcOnce.Do(func() {
		nvrtcLib, nvrtcErr = openNVRTC(nvrtcCandidates(runtime.GOOS, runtime.GOARCH, os.Getenv))
	})
	return nvrtcLib, nvrtcErr
}

func openNVRTC(cands []string) (*nvrtcAPI, error) {
	if !dlSupported || len(cands) == 0 {
		return nil, &LoadError{Library: "NVRTC", Tried: fmt.Errorf("no NVRTC on %s/%s", runtime.GOOS, runtime.GOARCH)}
	}
	var errs []error
	for _, p := range cands {
		h, err := dlOpen(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", p, err))
			continue
		}
		n := &nvrtcAPI{path: p}
		if err := bindAll(h, n.symbols()); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", p, err))
			continue
		}
		return n, nil
	}
	return nil, &LoadError{Library: "NVRTC", Tried: errors.Join(errs...)}
}

// NVRTCVersion is the loaded NVRTC's version, e.g. "13.0", and its path.
func NVRTCVersion() (version, path string, err error) {
	n, err := loadNVRTC()
	if err != nil {
		return "", "", err
	}
	var major, minor int32
	if r := n.version(&major, &minor); r != NVRTCSuccess {
		return "", n.path, &NVRTCError{Func: "nvrtcVersion", Code: r}
	}
	return fmt.Sprintf("%d.%d", major, minor), n.path, nil
}

// compileOutput is what one compilation produced: a CUBIN when the
// options named a real architecture (sm_XX), else PTX for the driver's
// JIT.
type compileOutput struct {
	image []byte
	cubin bool
}

// compileSource runs NVRTC on src with opts.
func compileSource(name, src string, opts []string, wantCubin bool) (out compileOutput, err error) {
	n, err := loadNVRTC()
	if err != nil {
		return out, err
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: nvrtc: %v", ErrCUDA, v)
		}
	}()
	var prog uintptr
	if r := n.createProgram(&prog, src, name, 0, nil, nil); r != NVRTCSuccess {
		return out, &NVRTCError{Func: "nvrtcCreateProgram", Code: r}
	}
	defer n.destroy(&prog)
	cs := make([][]byte, len(opts))
	ptrs := make([]*byte, len(opts)+1)
	for i, o := range opts {
		cs[i] = cString(o)
		ptrs[i] = &cs[i][0]
	}
	r := n.compile(prog, int32(len(opts)), unsafe.Pointer(&ptrs[0]))
	runtime.KeepAlive(cs)
	runtime.KeepAlive(ptrs)
	if r != NVRTCSuccess {
		return out, &NVRTCError{Func: "nvrtcCompileProgram", Code: r, Log: programLog(n, prog)}
	}
	size, get, fn := n.ptxSize, n.ptx, "nvrtcGetPTX"
	if wantCubin {
		size, get, fn = n.cubinSize, n.cubin, "nvrtcGetCUBIN"
	}
	var sz uint64
	if r := size(prog, &sz); r != NVRTCSuccess {
		return out, &NVRTCError{Func: fn + "Size", Code: r}
	}
	if sz == 0 || sz > 1<<30 {
		return out, &NVRTCError{Func: fn + "Size", Code: NVRTCInternalError, Log: fmt.Sprintf("size %d", sz)}
	}
	buf := make([]byte, sz)
	if r := get(prog, &buf[0]); r != NVRTCSuccess {
		return out, &NVRTCError{Func: fn, Code: r}
	}
	return compileOutput{image: buf, cubin: wantCubin}, nil
}

func programLog(n *nvrtcAPI, prog uintptr) string {
	var sz uint64
	if n.logSize(prog, &sz) != NVRTCSuccess || sz <= 1 || sz > 1<<24 {
		return ""
	}
	buf := make([]byte, sz)
	if n.log(prog, &buf[0]) != NVRTCSuccess {
		return ""
	}
	return cTrim(buf)
}

// Compile runs NVRTC on src for arch ("sm_90": a CUBIN; "compute_90":
// PTX) with CompileOptions, without a device or the cache. Tests use it to
// check that kernels compile on machines without a GPU.
func Compile(name, src, arch string) (image []byte, cubin bool, err error) {
	out, err := compileSource(name+".cu", src, CompileOptions(arch), len(arch) > 3 && arch[:3] == "sm_")
	return out.image, out.cubin, err
}
