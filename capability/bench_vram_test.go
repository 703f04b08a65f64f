package capability

import (
	"context"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// meterBackend reports a measured peak of 3 bytes per pixel of the last
// prepared reference (half its 16-byte estimate) and a device delta.
type meterBackend struct {
	fakeBackend
	lastPx int64
	calls  int
}

func (m *meterBackend) Prepare(ctx context.Context, me zenmetrics.Metric, ref *zenmetrics.Image, o zenmetrics.Options) (zenmetrics.Reference, error) {
	m.lastPx = ref.Pixels()
	return m.fakeBackend.Prepare(ctx, me, ref, o)
}

func (m *meterBackend) MeasureMemory(ctx context.Context, fn func() error) (int64, int64, error) {
	m.calls++
	if err := fn(); err != nil {
		return 0, -1, err
	}
	return 8 * m.lastPx, 9 * m.lastPx, nil
}

// vram_mib_at is the measured peak when the backend can measure, with the
// prediction kept beside it; the estimate otherwise.
func TestBenchMeasuresVRAM(t *testing.T) {
	gpu := &meterBackend{fakeBackend: fakeBackend{name: "gpu", nsPerPx: 0.01}}
	plain := &fakeBackend{name: "gpu2", nsPerPx: 0.01}
	p := NewProfile(testReport(), time.Now())
	cfg := BenchConfig{
		Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
		Sides:   []int{64, 128},
		Targets: []BenchTarget{
			{Class: ClassGPUFull, Backend: gpu, Mode: zenmetrics.ModeFull, RecordVRAM: true},
			{Class: ClassGPUStrip, Backend: plain, Mode: zenmetrics.ModeStrip, RecordVRAM: true},
		},
	}
	rep, err := Bench(context.Background(), cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		px := float64(r.Pixels)
		switch r.Class {
		case ClassGPUFull:
			if !r.VRAMMeasured || r.VRAMMiB != 8*px/(1<<20) || r.VRAMPredictedMiB != 16*px/(1<<20) || r.VRAMDeviceMiB != 9*px/(1<<20) {
				t.Errorf("measured cell %+v", r)
			}
		case ClassGPUStrip:
			if r.VRAMMeasured || r.VRAMMiB != 16*px/(1<<20) {
				t.Errorf("estimated cell %+v", r)
			}
		}
	}
	if gpu.calls != 2 {
		t.Errorf("%d measured runs, want one per size", gpu.calls)
	}
	s := p.Samples(zenmetrics.SSIMULACRA2, ClassGPUFull)
	if len(s) != 2 || s[1].VRAMMiB != 8*128*128/float64(1<<20) {
		t.Errorf("profile samples %+v: vram_mib_at should be the measured peak", s)
	}
}
