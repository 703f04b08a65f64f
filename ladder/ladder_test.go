package ladder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

type cell struct {
	m     zenmetrics.Metric
	class string
	px    int64
}

type memRecorder struct {
	cells []cell
	err   error
}

func (r *memRecorder) RecordOOM(_ context.Context, m zenmetrics.Metric, class string, px int64) error {
	r.cells = append(r.cells, cell{m, class, px})
	return r.err
}

// outcome of one simulated attempt on a rung
type outcome struct {
	err       error
	inPrepare bool
}

// drive runs a plan the way the orchestrator does: ask for a rung, attempt
// it, report back, until success or exhaustion.
func drive(p *Plan, admit func(Rung) Verdict, attempt func(Rung) outcome) (Rung, error) {
	ctx := context.Background()
	for {
		r := p.Next(admit)
		if r == FullyExhausted {
			return r, p.Exhausted()
		}
		o := attempt(r)
		if o.err == nil {
			p.Succeed(r, "b:"+r.String())
			return r, nil
		}
		if !p.Fail(ctx, r, "b:"+r.String(), Classify(o.err, o.inPrepare), o.err) {
			if p.done && Classify(o.err, o.inPrepare).IsOOM() {
				return FullyExhausted, p.Exhausted()
			}
			return r, o.err
		}
	}
}

func admitAll(Rung) Verdict { return Verdict{OK: true} }

func oom() error {
	return &zenmetrics.OutOfMemoryError{Backend: "gpu", Requested: 1 << 30, Free: 1 << 20}
}

func TestRungs(t *testing.T) {
	if got := fmt.Sprint(Rungs(zenmetrics.SSIMULACRA2, true)); got != "[gpu_full gpu_strip cpu]" {
		t.Fatalf("ssim2: %s", got)
	}
	if got := fmt.Sprint(Rungs(zenmetrics.CVVDP, true)); got != "[gpu_full gpu_strip gpu_strip_pair cpu]" {
		t.Fatalf("cvvdp: %s", got)
	}
	if got := fmt.Sprint(Rungs(zenmetrics.CVVDP, false)); got != "[cpu]" {
		t.Fatalf("no gpu: %s", got)
	}
	if GpuStrip.Mode() != zenmetrics.ModeStrip || GpuStripPair.Mode() != zenmetrics.ModeStripPair || Cpu.Mode() != zenmetrics.ModeFull {
		t.Fatal("modes")
	}
	if !GpuStripPair.IsGPU() || Cpu.IsGPU() {
		t.Fatal("IsGPU")
	}
}

// Every way a GPU rung can run out of memory ends on the CPU, and each
// failed rung leaves its cell.
func TestOOMOnEachGPURungFallsToCPU(t *testing.T) {
	const px = 4096 * 4096
	for _, m := range []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.CVVDP} {
		gpuRungs := Rungs(m, true)
		gpuRungs = gpuRungs[:len(gpuRungs)-1]
		for _, how := range []string{"predicted", "constructor", "runtime"} {
			rec := &memRecorder{}
			l := &Ladder{Recorder: rec}
			p := l.Begin(m, px, true)
			admit := func(r Rung) Verdict {
				if how == "predicted" && r.IsGPU() {
					return Verdict{Trigger: TriggerPredicted, Reason: "needs more than free × 0.85"}
				}
				return Verdict{OK: true}
			}
			attempt := func(r Rung) outcome {
				if r.IsGPU() {
					return outcome{oom(), how == "constructor"}
				}
				return outcome{}
			}
			r, err := drive(p, admit, attempt)
			if err != nil || r != Cpu {
				t.Fatalf("%s/%s: ended on %v with %v", m, how, r, err)
			}
			tr := p.Trace()
			if len(tr) != len(gpuRungs)+1 {
				t.Fatalf("%s/%s: trace %v", m, how, tr)
			}
			for i, g := range gpuRungs {
				want := map[string]Trigger{"predicted": TriggerPredicted, "constructor": TriggerConstructorOOM, "runtime": TriggerRuntimeOOM}[how]
				if tr[i].Rung != g || tr[i].Trigger != want {
					t.Fatalf("%s/%s: step %d = %v", m, how, i, tr[i])
				}
			}
			if how == "predicted" {
				// A prediction is about today's free memory: no cell.
				if len(rec.cells) != 0 || p.Attempts() != 1 {
					t.Fatalf("predicted: cells %v attempts %d", rec.cells, p.Attempts())
				}
				continue
			}
			if len(rec.cells) != len(gpuRungs) || p.Attempts() != len(gpuRungs)+1 {
				t.Fatalf("%s/%s: cells %v attempts %d", m, how, rec.cells, p.Attempts())
			}
			for i, g := range gpuRungs {
				if rec.cells[i] != (cell{m, g.Class(), px}) {
					t.Fatalf("%s/%s: cell %d = %v", m, how, i, rec.cells[i])
				}
			}
		}
	}
}

func TestNoFallbackStopsAtFirstOOM(t *testing.T) {
	for _, inPrepare := range []bool{true, false} {
		rec := &memRecorder{}
		l := &Ladder{Retry: NoFallback, Recorder: rec}
		p := l.Begin(zenmetrics.SSIMULACRA2, 1<<20, true)
		var tried []Rung
		r, err := drive(p, admitAll, func(r Rung) outcome {
			tried = append(tried, r)
			return outcome{oom(), inPrepare}
		})
		if r != FullyExhausted || len(tried) != 1 || p.Attempts() != 1 {
			t.Fatalf("ended %v after %v (%d attempts)", r, tried, p.Attempts())
		}
		if !errors.Is(err, ErrExhausted) || !errors.Is(err, zenmetrics.ErrOutOfMemory) {
			t.Fatalf("error %v should match ErrExhausted and ErrOutOfMemory", err)
		}
		if len(rec.cells) != 1 {
			t.Fatalf("NoFallback must still record the cell: %v", rec.cells)
		}
		if p.Next(admitAll) != FullyExhausted {
			t.Fatal("plan restarted after NoFallback")
		}
	}
}

func TestUnsupportedRungIsSkippedVisibly(t *testing.T) {
	l := &Ladder{}
	p := l.Begin(zenmetrics.SSIMULACRA2, 1<<20, true)
	admit := func(r Rung) Verdict {
		if r == GpuStrip {
			return Verdict{Trigger: TriggerUnsupported, Reason: "strips not implemented", Backend: "webgpu:x"}
		}
		return Verdict{OK: true}
	}
	r, err := drive(p, admit, func(r Rung) outcome {
		if r == GpuFull {
			return outcome{oom(), false}
		}
		return outcome{}
	})
	if err != nil || r != Cpu {
		t.Fatalf("%v %v", r, err)
	}
	tr := p.Trace()
	if len(tr) != 3 || tr[1].Rung != GpuStrip || tr[1].Trigger != TriggerUnsupported || tr[1].Attempted {
		t.Fatalf("trace %v", tr)
	}
	if !strings.Contains(tr[1].String(), "strips not implemented") {
		t.Fatalf("reason lost: %s", tr[1])
	}
}

func TestOtherErrorsDoNotFallBack(t *testing.T) {
	l := &Ladder{Recorder: &memRecorder{}}
	p := l.Begin(zenmetrics.SSIMULACRA2, 1<<20, true)
	bad := fmt.Errorf("%w: too small", zenmetrics.ErrBadInput)
	var tried int
	r, err := drive(p, admitAll, func(Rung) outcome { tried++; return outcome{bad, true} })
	if r != GpuFull || !errors.Is(err, zenmetrics.ErrBadInput) || tried != 1 {
		t.Fatalf("%v %v tried=%d", r, err, tried)
	}
	pe := &zenmetrics.PanicError{Value: "boom"}
	p = l.Begin(zenmetrics.SSIMULACRA2, 1<<20, false)
	if p.Fail(context.Background(), Cpu, "cpu", Classify(pe, false), pe) {
		t.Fatal("a panic must not fall back")
	}
}

func TestDeviceLostMovesOnWithoutCell(t *testing.T) {
	rec := &memRecorder{}
	l := &Ladder{Recorder: rec}
	p := l.Begin(zenmetrics.SSIMULACRA2, 1<<20, true)
	r, err := drive(p, admitAll, func(r Rung) outcome {
		if r.IsGPU() {
			return outcome{zenmetrics.ErrDeviceLost, false}
		}
		return outcome{}
	})
	if err != nil || r != Cpu || len(rec.cells) != 0 {
		t.Fatalf("%v %v cells=%v", r, err, rec.cells)
	}
}

func TestNothingAdmittedIsUnsupported(t *testing.T) {
	p := (&Ladder{}).Begin(zenmetrics.Butteraugli, 1<<20, false)
	r, err := drive(p, func(Rung) Verdict {
		return Verdict{Trigger: TriggerUnsupported, Reason: "not implemented on cpu"}
	}, nil)
	if r != FullyExhausted || !errors.Is(err, zenmetrics.ErrUnsupported) || !errors.Is(err, ErrExhausted) {
		t.Fatalf("%v %v", r, err)
	}
	if p.Attempts() != 0 {
		t.Fatal("attempts counted for refused rungs")
	}
}

func TestRecorderFailureIsInTrace(t *testing.T) {
	rec := &memRecorder{err: errors.New("disk full")}
	p := (&Ladder{Recorder: rec}).Begin(zenmetrics.SSIMULACRA2, 1<<20, true)
	p.Next(admitAll)
	if !p.Fail(context.Background(), GpuFull, "gpu", TriggerRuntimeOOM, oom()) {
		t.Fatal("a persistence failure must not stop the fallback")
	}
	if tr := p.Trace(); !strings.Contains(tr[0].Reason, "disk full") {
		t.Fatalf("trace %v", tr)
	}
}

func TestRefuseIsNotAnAttempt(t *testing.T) {
	rec := &memRecorder{}
	p := (&Ladder{Recorder: rec}).Begin(zenmetrics.SSIMULACRA2, 1<<20, true)
	if p.Next(admitAll) != GpuFull {
		t.Fatal("first rung")
	}
	p.Refuse(GpuFull, "gpu", TriggerUnsupported, "opened late: no full mode")
	if p.Next(admitAll) != GpuStrip || p.Attempts() != 0 || len(rec.cells) != 0 {
		t.Fatalf("attempts %d cells %v", p.Attempts(), rec.cells)
	}
	if tr := p.Trace(); len(tr) != 1 || tr[0].Attempted || tr[0].Trigger != TriggerUnsupported {
		t.Fatalf("trace %v", tr)
	}
}

// FailAs records the OOM cell under the class it is given (a CUDA slot's
// "cuda_full" on GpuFull), not the rung's own, and otherwise behaves as
// Fail: the task moves on to the next rung.
func TestFailAsRecordsTheGivenClass(t *testing.T) {
	rec := &memRecorder{}
	p := (&Ladder{Recorder: rec}).Begin(zenmetrics.SSIMULACRA2, 1<<20, true)
	p.Next(admitAll)
	if !p.FailAs(context.Background(), GpuFull, "cuda_full", "cuda:gpu", TriggerConstructorOOM, oom()) {
		t.Fatal("an OOM must move on")
	}
	if want := []cell{{zenmetrics.SSIMULACRA2, "cuda_full", 1 << 20}}; len(rec.cells) != 1 || rec.cells[0] != want[0] {
		t.Fatalf("cells %v, want %v", rec.cells, want)
	}
	if p.Next(admitAll) != GpuStrip {
		t.Fatal("next rung")
	}
	if tr := p.Trace(); tr[0].Rung != GpuFull || tr[0].Backend != "cuda:gpu" || !tr[0].Attempted {
		t.Fatalf("trace %v", tr)
	}
}
