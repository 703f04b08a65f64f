package batch

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// laneBackend records, per metric, when its Prepares started and ended,
// in one log shared by every lane.
type laneBackend struct {
	*fakeBackend
	log *prepLog
}

type prepLog struct {
	mu     sync.Mutex
	events []string // "start <lane> <metric>", "end <lane> <metric>"
}

func (l *prepLog) add(s string) {
	l.mu.Lock()
	l.events = append(l.events, s)
	l.mu.Unlock()
}

func (b *laneBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	b.log.add(fmt.Sprintf("start %s %s", b.name, m))
	time.Sleep(2 * time.Millisecond)
	defer b.log.add(fmt.Sprintf("end %s %s", b.name, m))
	return b.fakeBackend.Prepare(ctx, m, ref, opt)
}

// Workers spread over the lanes, each lane prepares its own references,
// every pair is scored once with the scores of a single backend, and no
// lane starts preparing a metric before the first Prepare of that metric
// has returned (the one that compiles its kernels on a GPU).
func TestEngineLanes(t *testing.T) {
	c := makeCorpus(t, 3, 4, false)
	log := &prepLog{}
	lanes := make([]*laneBackend, 3)
	var fors []BackendFor
	for i := range lanes {
		lanes[i] = &laneBackend{fakeBackend: &fakeBackend{name: fmt.Sprintf("lane%d", i), delay: time.Millisecond}, log: log}
		b := lanes[i]
		fors = append(fors, func(zenmetrics.Metric) (zenmetrics.Backend, error) { return b, nil })
	}
	e, err := NewBackendEngine(BackendEngineConfig{Lanes: fors, Workers: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Lanes() != 3 {
		t.Fatalf("Lanes() = %d", e.Lanes())
	}
	out := filepath.Join(t.TempDir(), "o.jsonl")
	metrics := []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.Butteraugli}
	pairs, err := ReadManifest(c.manifest, "")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), Config{Pairs: pairs, Metrics: metrics, Out: out, Engine: e, Decoders: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.AllOK() || sum.OK != len(pairs)*2 {
		t.Fatalf("summary %+v", sum)
	}
	checkExactlyOnce(t, c, readAll(t, out), metrics)
	used := 0
	for _, l := range lanes {
		if l.scores.Load() > 0 {
			used++
		}
		if l.live.Load() != 0 && l.prepares.Load() == 0 {
			t.Errorf("%s holds references it never prepared", l.name)
		}
	}
	if used < 2 {
		t.Errorf("only %d of 3 lanes scored", used)
	}
	firstEnd := map[string]bool{}
	started := map[string]int{}
	for _, ev := range log.events {
		var kind, lane, m string
		fmt.Sscan(ev, &kind, &lane, &m)
		switch kind {
		case "start":
			if started[m] > 0 && !firstEnd[m] {
				t.Fatalf("a second Prepare of %s started before the first returned: %v", m, log.events)
			}
			started[m]++
		case "end":
			firstEnd[m] = true
		}
	}
	e.Close()
	for _, l := range lanes {
		if n := l.live.Load(); n != 0 {
			t.Errorf("%s: %d references not released after Close", l.name, n)
		}
	}
}

// openLanes opens DefaultGPULanes-1 more backends for a GPU (an
// UploadMeter), as many as --gpu-lanes asks, none for the CPU, never more
// than the workers, and leaves out one that opens as another kind.
func TestOpenLanes(t *testing.T) {
	for _, tc := range []struct {
		name              string
		cpu               bool
		lanes, workers    int
		fallbackAt        int // the n-th open returns a CPU backend (0: none)
		wantLanes, wantOp int
	}{
		{"default", false, 0, 16, 0, DefaultGPULanes - 1, DefaultGPULanes - 1},
		{"cpu", true, 4, 16, 0, 0, 0},
		{"one", false, 1, 16, 0, 0, 0},
		{"capped-by-workers", false, 8, 2, 0, 1, 1},
		{"fallback-left-out", false, 4, 16, 2, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			opened := 0
			deps := Deps{OpenBackend: func(BackendOptions) (zenmetrics.Backend, error) {
				mu.Lock()
				opened++
				n := opened
				mu.Unlock()
				if n == tc.fallbackAt {
					return &fakeBackend{name: "cpu"}, nil // auto fell back to the CPU
				}
				return newMetered(0, 0), nil
			}}
			var first zenmetrics.Backend = newMetered(0, 0)
			if tc.cpu {
				first = &fakeBackend{name: "cpu"}
			}
			got := openLanes(&Options{GPULanes: tc.lanes, Workers: tc.workers}, deps, first, io.Discard)
			if len(got) != tc.wantLanes || opened != tc.wantOp {
				t.Fatalf("%d lanes from %d opens, want %d from %d", len(got), opened, tc.wantLanes, tc.wantOp)
			}
			for _, b := range got {
				if b.Name() != first.Name() {
					t.Fatalf("lane %q on a %q batch", b.Name(), first.Name())
				}
			}
		})
	}
}

// Prewarm prepares (and releases) one reference per lane and metric, on
// every lane at once, lane l starting with metric l mod metrics, and jobs
// of a prewarmed metric do not wait for another lane.
func TestEnginePrewarm(t *testing.T) {
	log := &prepLog{}
	lanes := make([]*laneBackend, 3)
	var fors []BackendFor
	for i := range lanes {
		lanes[i] = &laneBackend{fakeBackend: &fakeBackend{name: fmt.Sprintf("lane%d", i)}, log: log}
		b := lanes[i]
		fors = append(fors, func(zenmetrics.Metric) (zenmetrics.Backend, error) { return b, nil })
	}
	e, err := NewBackendEngine(BackendEngineConfig{Lanes: fors, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	metrics := []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.Butteraugli}
	e.Prewarm(metrics)
	e.warm.Wait()
	log.mu.Lock()
	events := append([]string(nil), log.events...)
	log.mu.Unlock()
	firstOn := map[string]string{} // lane -> metric of its first Prepare
	for _, ev := range events {
		var kind, lane, m string
		fmt.Sscan(ev, &kind, &lane, &m)
		if _, ok := firstOn[lane]; !ok && kind == "start" {
			firstOn[lane] = m
		}
	}
	for l := range lanes {
		if want := metrics[l%len(metrics)].String(); firstOn[fmt.Sprintf("lane%d", l)] != want {
			t.Errorf("lane%d started with %q, want %q (events %v)", l, firstOn[fmt.Sprintf("lane%d", l)], want, events)
		}
	}
	for _, l := range lanes {
		if n := l.prepares.Load(); n != 2 {
			t.Errorf("%s prepared %d references, want one per metric", l.name, n)
		}
		if n := l.live.Load(); n != 0 {
			t.Errorf("%s holds %d prewarm references", l.name, n)
		}
	}
	for _, m := range metrics {
		select {
		case <-e.first[m]:
		default:
			t.Errorf("%s: jobs would wait at the first-Prepare gate after Prewarm", m)
		}
	}
	e.Close()
}
