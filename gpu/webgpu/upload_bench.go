package webgpu

import (
	"context"
	"fmt"
	"sort"
	"time"
	"unsafe"

	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

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
