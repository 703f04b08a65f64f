package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/cuda/all"
)

// cudaTarget opens CUDA device 0 for -strips -strip-runtime cuda. The
// budget caps the free memory the backend plans strips in
// (cuda.Backend.SetFreeLimit); memory is measured as the peak of the
// device's held bytes (its allocator's accounting, cache emptied first),
// polled while the run goes (no NVML figure: -1).
func cudaTarget() (*stripTarget, error) {
	b, err := cuda.NewBackend(0)
	if err != nil {
		return nil, err
	}
	d := b.Device()
	info := d.Info()
	return &stripTarget{b: b, runtime: "cuda", info: info, desc: fmt.Sprintf("%s (%s, driver %d)", info.Name, info.Arch(), d.Driver()),
		setBudget: b.SetFreeLimit,
		measure: func(ctx context.Context, fn func() error) (int64, int64, error) {
			d.Trim()
			base := d.Held()
			var peak atomic.Int64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				t := time.NewTicker(200 * time.Microsecond)
				defer t.Stop()
				for {
					peak.Store(max(peak.Load(), d.Held()-base))
					select {
					case <-stop:
						return
					case <-t.C:
					}
				}
			}()
			err := fn()
			close(stop)
			<-done
			return peak.Load(), -1, err
		},
		stripInfo: cuda.StripsOf}, nil
}
