package upband

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
)

func TestMain(m *testing.M) { gputest.Main(m) }

// TestRecordAsync: a record's commands come back with its time; a record
// whose context is cancelled while it runs (Do returns before the call
// ends) has what it made discarded, once, after it has ended, and the
// answer carries the context's error and no commands.
func TestRecordAsync(t *testing.T) {
	dev := gputest.Device(t)
	made := new(int)
	res := <-RecordAsync(context.Background(), dev, func(*webgpu.GPU) (*int, error) {
		time.Sleep(time.Millisecond)
		return made, nil
	}, func(*int) { t.Error("discarded a record that succeeded") })
	if res.Err != nil || res.C != made || res.Took < time.Millisecond {
		t.Fatalf("answer %+v, want the record's commands, its time and no error", res)
	}

	ctx, cancel := context.WithCancel(context.Background())
	discarded := 0
	ended := false
	res = <-RecordAsync(ctx, dev, func(*webgpu.GPU) (*int, error) {
		cancel() // Do's caller stops waiting; this call goes on
		time.Sleep(20 * time.Millisecond)
		ended = true
		return made, nil
	}, func(c *int) {
		if !ended || c != made {
			t.Errorf("discard before the record ended (%v) or of other commands", ended)
		}
		discarded++
	})
	if !errors.Is(res.Err, context.Canceled) || res.C != nil {
		t.Fatalf("answer %+v, want context.Canceled and no commands", res)
	}
	if discarded != 1 {
		t.Fatalf("discarded %d times, want once", discarded)
	}
}
