package webgpu

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"
	"unsafe"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
	"github.com/zenmetrics-go/zenmetrics/wgsl"
)

// ReferenceBytes is the device memory a prepared reference of this backend
// holds (resident planes plus its scoring scratch), 0 for other types.
func ReferenceBytes(r zenmetrics.Reference) int64 {
	switch s := r.(type) {
	case *ssim2Ref:
		return s.Bytes()
	case *ssim2StripRef:
		return s.Bytes()
	case interface{ Bytes() int64 }: // Butteraugli, full and strips
		return s.Bytes()
	}
	return 0
}

// FMAMode reports how the SSIMULACRA2 kernels compute fused multiply-adds
// on this device ("native", "emulated", "inexact"; "" before first use).
func (b *Backend) FMAMode() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ssim2 == nil {
		return ""
	}
	return b.ssim2.FMA
}

// SSIM2BytesPerPixel is the model of global-memory traffic per distorted
// pixel of one SSIMULACRA2 score (one alpha pass), counting every load and
// store a kernel issues once (an upper bound: hblur's five quantity threads
// re-read the same two planes, which L2 partly absorbs). Per scale with
// N_s pixels: unpack (scale 0) raw bytes + 6 planes written; downsample
// 3 planes read at the finer scale + 6 written; per channel hblur 5 × 2
// planes read + 5 written, vmaps 7 planes read (the rows it reads again
// 10 rows later come from cache).
func SSIM2BytesPerPixel(w, h, rawBytesPerPixel int) float64 {
	plan := ssim2Plan(w, h)
	n0 := float64(w) * float64(h)
	total := float64(rawBytesPerPixel)*n0 + 24*n0
	for s, sc := range plan {
		n := float64(sc.W) * float64(sc.H)
		if s > 0 {
			prev := float64(plan[s-1].W) * float64(plan[s-1].H)
			total += 12*prev + 24*n
		}
		total += 3 * (4*(10+5)*n + 4*7*n)
	}
	return total / n0
}

// UploadBandwidth measures host → device upload of n bytes, median of reps:
// queue.WriteBuffer into a storage buffer (what Score uses), and a buffer
// created mapped for writing, filled in place, unmapped and copied on the
// GPU. Each timing includes waiting for the queue to finish. GB/s = 1e9 B/s.
func (b *Backend) UploadBandwidth(ctx context.Context, n int64, reps int) (writeBuffer, mapped float64, err error) {
	n = (n + 3) &^ 3
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i * 2654435761 >> 13)
	}
	med := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(n) / d[len(d)/2].Seconds() / 1e9
	}
	err = b.dev.Do(ctx, func(g *GPU) error {
		dst, err := g.Storage(n)
		if err != nil {
			return err
		}
		defer dst.Release()
		var wt, mt []time.Duration
		for i := 0; i < reps+1; i++ {
			t0 := time.Now()
			g.Write(dst, 0, data)
			if err := g.WaitIdle(); err != nil {
				return err
			}
			if i > 0 {
				wt = append(wt, time.Since(t0))
			}
		}
		for i := 0; i < reps+1; i++ {
			t0 := time.Now()
			st, err := g.NewBuffer(n, wgpu.BufferUsageMapWrite|wgpu.BufferUsageCopySrc, "upload staging")
			if err != nil {
				return err
			}
			var status wgpu.MapAsyncStatus
			var msg string
			f := st.h.MapAsync(wgpu.MapModeWrite, 0, uintptr(n), wgpu.CallbackModeWaitAnyOnly, func(s wgpu.MapAsyncStatus, m string) {
				status, msg = s, m
			})
			if err := waitFuture(g.d.inst, f, "mapAsync(write)"); err != nil {
				st.Destroy()
				return err
			}
			if status != wgpu.MapAsyncStatusSuccess {
				st.Destroy()
				return fmt.Errorf("webgpu: mapAsync(write): %s: %s", status, msg)
			}
			p := st.h.GetMappedRange(0, uintptr(n))
			if p == nil {
				st.Destroy()
				return fmt.Errorf("webgpu: GetMappedRange returned NULL")
			}
			copy(unsafe.Slice((*byte)(p), n), data)
			st.h.Unmap()
			e := g.Encoder()
			e.Copy(st, 0, dst, 0, n)
			if err := e.Submit(); err != nil {
				st.Destroy()
				return err
			}
			err = g.WaitIdle()
			st.Destroy()
			if err != nil {
				return err
			}
			if i > 0 {
				mt = append(mt, time.Since(t0))
			}
		}
		writeBuffer, mapped = med(wt), med(mt)
		return nil
	})
	return writeBuffer, mapped, err
}

// SSIM2PassProfile scores dist against a reference prepared by this
// package with every dispatch in its own timed pass, and returns the GPU
// time of each (labels "unpack s0", "downsample s1", "hblur s0 c1",
// "vmaps s2 c0", ..., "reduce"). Nil without TimestampQuery. Timing each
// dispatch separately serialises them, so the sum exceeds a plain score a
// little.
func SSIM2PassProfile(ctx context.Context, ref zenmetrics.Reference, dist *zenmetrics.Image) ([]PassTime, error) {
	r, ok := ref.(*ssim2Ref)
	if !ok {
		return nil, fmt.Errorf("webgpu: SSIM2PassProfile: not a SSIMULACRA2 reference of this backend")
	}
	if dist.Width != r.w || dist.Height != r.h {
		return nil, &zenmetrics.SizeMismatchError{RefWidth: r.w, RefHeight: r.h, DistWidth: dist.Width, DistHeight: dist.Height}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return nil, zenmetrics.ErrReleased
	}
	var out []PassTime
	err := r.b.dev.Do(ctx, func(g *GPU) error {
		if !g.Timestamps() {
			return nil
		}
		var err error
		out, err = r.run(g, dist, true, nil)
		return err
	})
	return out, err
}

// ssim2Tuning returns the SSIMULACRA2 kernel geometry: vmaps columns per
// workgroup, whether widths that are a multiple of 4 use the 16-byte
// hblur kernel, and the height of vmaps' row bands. The first two leave
// every computed value unchanged (the scores are bit-identical); the band
// height changes only the order in which the per-pixel terms are added
// (the blurred values are the same bits). The environment can override
// them for benchmarking (read once per device, when the kernels are
// compiled): ZENMETRICS_SSIM2_VX = 8, 16 or 32, ZENMETRICS_SSIM2_HBLUR4 =
// 0, ZENMETRICS_SSIM2_BAND = rows (a positive multiple of 20; 0: one band).
func ssim2Tuning() (vx int, hblur4 bool, band int) {
	vx, hblur4, band = ssim2VCols, true, ssim2BandRowsDefault
	switch os.Getenv("ZENMETRICS_SSIM2_VX") {
	case "8":
		vx = 8
	case "16":
		vx = 16
	case "32":
		vx = 32
	}
	if os.Getenv("ZENMETRICS_SSIM2_HBLUR4") == "0" {
		hblur4 = false
	}
	if v, err := strconv.Atoi(os.Getenv("ZENMETRICS_SSIM2_BAND")); err == nil && v >= 0 && v%wgsl.SSIM2ChunkRows == 0 {
		band = v
	}
	return vx, hblur4, band
}
