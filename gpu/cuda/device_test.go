package cuda_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
)

const testKernel = `
extern "C" __global__ void axpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], y[i]);
}
extern "C" __global__ void fill(unsigned* p, unsigned v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v + i;
}
`

// The device answers: its info is plausible, memory round-trips through
// page-locked buffers, a kernel compiled by NVRTC computes, events time.
func TestDevice(t *testing.T) {
	d := cudatest.Device(t)
	info := d.Info()
	t.Logf("%s: %s, %d SMs, %.1f GiB (%.1f free), driver %d, bus %s", d.Name(), info.Arch(), info.SMs,
		float64(info.TotalMem)/(1<<30), float64(info.FreeMem)/(1<<30), d.Driver(), info.PCIBusID)
	if info.Major < 3 || info.SMs <= 0 || info.TotalMem == 0 || info.Name == "" || d.Driver() < 11000 {
		t.Fatalf("implausible device info %+v, driver %d", info, d.Driver())
	}
	m, err := d.Module("cudatest", testKernel)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("module: cubin %v, from cache %v", m.Cubin, m.Cached)
	axpy, err := m.Function("axpy")
	if err != nil {
		t.Fatal(err)
	}
	fill, err := m.Function("fill")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Function("nope"); !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Errorf("missing kernel: %v", err)
	}
	const n = 1 << 20
	wk, err := cuda.NewWorker(d, 4*n, 8*n)
	if err != nil {
		t.Fatal(err)
	}
	defer wk.Close()
	x, err := d.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	y, err := d.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(x, y)
	src := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		v := math.Float32bits(float32(i) * 0.5)
		src[4*i], src[4*i+1], src[4*i+2], src[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	st := wk.Stream
	if err := wk.Upload(x, src); err != nil {
		t.Fatal(err)
	}
	if err := st.Fill32(y, 0, math.Float32bits(1), n); err != nil {
		t.Fatal(err)
	}
	start, _ := d.NewEvent()
	end, _ := d.NewEvent()
	defer start.Destroy()
	defer end.Destroy()
	_ = start.Record(st)
	if err := st.Launch(axpy, cuda.Dim3{X: cuda.Groups(n, 256)}, cuda.Dim3{X: 256}, 0, x, y, float32(2), n); err != nil {
		t.Fatal(err)
	}
	_ = end.Record(st)
	if err := st.Download(wk.Out, 0, y, 0, 4*n); err != nil {
		t.Fatal(err)
	}
	if err := st.Sync(); err != nil {
		t.Fatal(err)
	}
	ms, err := cuda.Elapsed(start, end)
	if err != nil || ms < 0 {
		t.Errorf("elapsed %v %v", ms, err)
	}
	b := wk.Out.Bytes
	for _, i := range []int{0, 1, 777, n - 1} {
		got := math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
		if want := float32(2)*float32(i)*0.5 + 1; got != want {
			t.Errorf("y[%d] = %v, want %v", i, got, want)
		}
	}
	// A second kernel and a zeroing memset on the same stream, in order.
	if err := st.Launch(fill, cuda.Dim3{X: cuda.Groups(n, 256)}, cuda.Dim3{X: 256}, 0, y, uint32(7), n); err != nil {
		t.Fatal(err)
	}
	if err := st.Zero(y, 0, 8); err != nil {
		t.Fatal(err)
	}
	if err := st.Download(wk.Out, 0, y, 0, 16); err != nil {
		t.Fatal(err)
	}
	if err := st.Sync(); err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 || b[7] != 0 || b[8] != 9 || b[12] != 10 {
		t.Errorf("after fill+zero: % x", b[:16])
	}
	if err := st.Launch(fill, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, y, "bad", n); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("bad argument type: %v", err)
	}
	if err := st.Upload(x, 4*n-4, wk.Out, 0, 8); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("upload past the end: %v", err)
	}
}

// An impossible allocation is a typed out-of-memory error with the free
// memory, and the device stays usable.
func TestOutOfMemory(t *testing.T) {
	d := cudatest.Device(t)
	_, err := d.Alloc(1 << 50)
	var oom *zenmetrics.OutOfMemoryError
	if !errors.Is(err, zenmetrics.ErrOutOfMemory) || !errors.As(err, &oom) || oom.Free <= 0 {
		t.Fatalf("1 PiB allocation: %v", err)
	}
	t.Logf("%v", err)
	b, err := d.Alloc(1 << 20)
	if err != nil {
		t.Fatalf("after OOM: %v", err)
	}
	d.Free(b)
	free, total, err := d.MemInfo()
	if err != nil || free == 0 || free > total {
		t.Fatalf("MemInfo %d %d %v", free, total, err)
	}
}

// A compilation error comes back with NVRTC's log.
func TestCompileError(t *testing.T) {
	d := cudatest.Device(t)
	_, err := d.Module("broken", `extern "C" __global__ void k() { this is not C++; }`)
	var ne *cuda.NVRTCError
	if !errors.As(err, &ne) || ne.Code != cuda.NVRTCCompilation || ne.Log == "" {
		t.Fatalf("%v", err)
	}
}

// BenchmarkH2DPinned is the DMA bandwidth from page-locked memory (no CPU
// copy): 64 MiB per iteration.
func BenchmarkH2DPinned(b *testing.B) {
	d := cudatest.Device(b)
	const size = 64 << 20
	h, err := d.HostAlloc(size)
	if err != nil {
		b.Fatal(err)
	}
	defer d.FreeHost(h)
	buf, err := d.Alloc(size)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Free(buf)
	st, err := d.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer st.Destroy()
	for i := range h.Bytes {
		h.Bytes[i] = byte(i * 7)
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := st.Upload(buf, 0, h, 0, size); err != nil {
			b.Fatal(err)
		}
		if err := st.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkH2DStaged is Worker.Upload from ordinary Go memory: the CPU
// fills the two page-locked chunks while the DMA engine copies.
func BenchmarkH2DStaged(b *testing.B) {
	for _, size := range []int{6 << 20, 48 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			d := cudatest.Device(b)
			wk, err := cuda.NewWorker(d, int64(size), 8)
			if err != nil {
				b.Fatal(err)
			}
			defer wk.Close()
			buf, err := d.Alloc(int64(size))
			if err != nil {
				b.Fatal(err)
			}
			defer d.Free(buf)
			src := make([]byte, size)
			for i := range src {
				src[i] = byte(i * 13)
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := wk.Upload(buf, src); err != nil {
					b.Fatal(err)
				}
				if err := wk.Stream.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A PinnedImage's pixels upload in place (Worker.Upload and
// UploadOverlapped) and arrive intact; bad sizes are refused; release is
// idempotent.
func TestPinnedImage(t *testing.T) {
	be := cudatest.Backend(t)
	d := be.Device()
	const w, h = 1000, 777 // 2.3 MB: several chunks of a 1 MiB worker
	im, release, err := be.PinnedImage(w, h, zenmetrics.RGB8)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if im.Stride != 3*w || len(im.Pix) != 3*w*h || im.Validate() != nil {
		t.Fatalf("image %dx%d stride %d len %d: %v", im.Width, im.Height, im.Stride, len(im.Pix), im.Validate())
	}
	for i := range im.Pix {
		im.Pix[i] = byte(i*31 + i>>9)
	}
	wk, err := cuda.NewWorker(d, 1<<20, int64(len(im.Pix)))
	if err != nil {
		t.Fatal(err)
	}
	defer wk.Close()
	buf, err := d.Alloc(int64(len(im.Pix)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(buf)
	for _, overlapped := range []bool{false, true} {
		if err := wk.Stream.Zero(buf, 0, buf.Size); err != nil {
			t.Fatal(err)
		}
		calls := 0
		if overlapped {
			err = wk.UploadOverlapped(buf, im.Pix, func(int64) error { calls++; return nil })
		} else {
			err = wk.Upload(buf, im.Pix)
		}
		if err != nil {
			t.Fatal(err)
		}
		// buf.Size is the allocator's rounded size; the image is less.
		if err := wk.Stream.Download(wk.Out, 0, buf, 0, int64(len(im.Pix))); err != nil {
			t.Fatal(err)
		}
		if err := wk.Stream.Sync(); err != nil {
			t.Fatal(err)
		}
		for i, v := range wk.Out.Bytes[:len(im.Pix)] {
			if v != im.Pix[i] {
				t.Fatalf("overlapped %v: byte %d is %d, want %d", overlapped, i, v, im.Pix[i])
			}
		}
		if overlapped && calls != 3 {
			t.Errorf("overlapped upload of %d bytes in 1 MiB chunks: %d ready calls, want 3", len(im.Pix), calls)
		}
	}
	for _, bad := range [][2]int{{0, 5}, {5, -1}, {1 << 30, 1 << 30}} {
		if _, _, err := be.PinnedImage(bad[0], bad[1], zenmetrics.RGB8); !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("PinnedImage(%d, %d): %v, want ErrBadInput", bad[0], bad[1], err)
		}
	}
	release()
	release()
}

// BenchmarkH2DPinnedImage is Worker.Upload from a PinnedImage (in place,
// no staging), beside BenchmarkH2DStaged's ordinary memory.
func BenchmarkH2DPinnedImage(b *testing.B) {
	for _, mp := range []int{1, 16} {
		b.Run(fmt.Sprintf("%dMP", mp), func(b *testing.B) {
			be := cudatest.Backend(b)
			w, h := cudatest.MP(mp)
			im, release, err := be.PinnedImage(w, h, zenmetrics.RGB8)
			if err != nil {
				b.Fatal(err)
			}
			defer release()
			wk, err := cuda.NewWorker(be.Device(), int64(len(im.Pix)), 8)
			if err != nil {
				b.Fatal(err)
			}
			defer wk.Close()
			buf, err := be.Device().Alloc(int64(len(im.Pix)))
			if err != nil {
				b.Fatal(err)
			}
			defer be.Device().Free(buf)
			b.SetBytes(int64(len(im.Pix)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := wk.Upload(buf, im.Pix); err != nil {
					b.Fatal(err)
				}
				if err := wk.Stream.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
