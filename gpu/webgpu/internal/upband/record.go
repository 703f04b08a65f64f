package upband

import (
	"context"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Recorded is RecordAsync's answer: the recorded commands, how long the
// device thread took to record them, and the error.
type Recorded[C comparable] struct {
	C    C
	Took time.Duration
	Err  error
}

// RecordAsync calls record on the device thread from a goroutine of its
// own, so that the caller fills its staging slots meanwhile (the record
// only copies out of a slot, which may still be mapped until the submit);
// the answer comes on the channel. When Do fails, what record made is
// handed to discard (DiscardLater): a cancelled context lets Do return
// before a call already running has ended.
func RecordAsync[C comparable](ctx context.Context, dev *webgpu.Device, record func(g *webgpu.GPU) (C, error), discard func(C)) <-chan Recorded[C] {
	out := make(chan Recorded[C], 1)
	go func() {
		var res Recorded[C]
		var c C // device thread only, until Do has returned nil
		res.Err = dev.Do(ctx, func(g *webgpu.GPU) error {
			t := time.Now()
			var err error
			c, err = record(g)
			res.Took = time.Since(t)
			return err
		})
		if res.Err != nil {
			DiscardLater(dev, &c, discard)
		} else {
			res.C = c
		}
		out <- res
	}()
	return out
}

// DiscardLater gives *c (when not the zero value) to discard and clears
// it, on the device thread after any call still running there.
func DiscardLater[C comparable](dev *webgpu.Device, c *C, discard func(C)) {
	_ = dev.Do(context.Background(), func(*webgpu.GPU) error {
		var zero C
		if *c != zero {
			discard(*c)
			*c = zero
		}
		return nil
	})
}
