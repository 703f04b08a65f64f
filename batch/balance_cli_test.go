package batch

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics/orchestrator"
)

// --balance runs the batch on the orchestrator (here CPU only, --backend
// cpu, with the real CPU metrics): every pair scored exactly once, the
// JSON progress lines carry per-device statistics, --stats prints the
// device table, and --metrics-addr serves on loopback.
func TestCLIBalanceOnOrchestrator(t *testing.T) {
	c := makeCorpus(t, 2, 3, false)
	out := filepath.Join(t.TempDir(), "o.jsonl")
	deps := fakeDeps(&fakeBackend{name: "unused"}, nil)
	code, _, stderr := runCLI(t, deps, "--manifest", c.manifest, "--metric", "ssim2", "--out", out,
		"--backend", "cpu", "--balance", "least-loaded", "--cache-dir", t.TempDir(), "--workers", "2",
		"--progress", "json", "--stats", "--metrics-addr", "127.0.0.1:0")
	if code != ExitOK {
		t.Fatalf("code %d, stderr:\n%s", code, stderr)
	}
	rows := readAll(t, out)
	if len(rows) != c.pairs {
		t.Fatalf("%d rows, want %d", len(rows), c.pairs)
	}
	var devTasks int64 = -1
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var v struct {
			Type    string `json:"type"`
			Devices []struct {
				Name  string `json:"name"`
				Tasks int64  `json:"tasks"`
			} `json:"devices"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if v.Type == "summary" && len(v.Devices) == 1 && v.Devices[0].Name == "cpu" {
			devTasks = v.Devices[0].Tasks
		}
	}
	// The summary object (JSON progress lines carry the same "devices"
	// field, at intervals too long for this test) counts every task on
	// the CPU pool.
	if devTasks != int64(c.pairs) {
		t.Fatalf("devices in the JSON summary: last cpu tasks %d, want %d; stderr:\n%s", devTasks, c.pairs, stderr)
	}
	if !strings.Contains(stderr, "device ") || !strings.Contains(stderr, "fallbacks") || !strings.Contains(stderr, "metrics at http://127.0.0.1:") {
		t.Fatalf("no device table or metrics line:\n%s", stderr)
	}
}

func TestCLIBalanceRefusals(t *testing.T) {
	c := makeCorpus(t, 1, 1, false)
	deps := fakeDeps(&fakeBackend{name: "unused"}, nil)
	for _, args := range [][]string{
		{"--balance", "fastest"},
		{"--balance", "adaptive", "--backend", "webgpu"}, // explicit backend: never overridden
		{"--metrics-addr", "0.0.0.0:9464"},               // not loopback without --metrics-allow-remote
	} {
		out := filepath.Join(t.TempDir(), "o.jsonl")
		a := append([]string{"--manifest", c.manifest, "--out", out, "--quiet", "--cache-dir", t.TempDir()}, args...)
		if code, _, stderr := runCLI(t, deps, a...); code != ExitUsage {
			t.Errorf("%v: code %d, stderr %s", args, code, stderr)
		}
	}
}

// Every JSON progress line carries "devices" when the run is on the
// orchestrator, and none otherwise.
func TestProgressJSONDevices(t *testing.T) {
	for _, with := range []bool{false, true} {
		var buf strings.Builder
		p := NewProgress(ProgressJSON, &buf, time.Hour)
		if with {
			p.devices = func() any { return []orchestrator.DeviceStats{{Name: "gpu0", GPU: true, Tasks: 3}} }
		}
		p.started = time.Now()
		p.draw(false)
		line := buf.String()
		has := strings.Contains(line, `"devices":[{"name":"gpu0","gpu":true,`) && strings.Contains(line, `"tasks":3`)
		if has != with || strings.Contains(line, "devices") != with {
			t.Fatalf("with=%v: %s", with, line)
		}
	}
}

// --backend auto runs on the orchestrator when a CUDA device is usable
// (Deps.HasCUDA), and on the one --backend with GPU lanes otherwise or
// when --gpu-lanes is given.
func TestCLIAutoWithCUDARunsOnOrchestrator(t *testing.T) {
	c := makeCorpus(t, 2, 3, false)
	for _, tc := range []struct {
		name     string
		cuda     bool
		args     []string
		wantOrch bool
	}{
		{"cuda", true, nil, true},
		{"no cuda", false, nil, false},
		{"cuda, --gpu-lanes", true, []string{"--gpu-lanes", "2"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{name: "fake"}
			deps := fakeDeps(b, nil)
			deps.HasCUDA = func() bool { return tc.cuda }
			opened := false
			deps.OpenOrchestrator = func(ctx context.Context, cfg orchestrator.Config) (*orchestrator.Orchestrator, error) {
				opened = true
				cfg.DisableGPU = true // hermetic: the CPU pool alone
				return orchestrator.New(ctx, cfg)
			}
			out := filepath.Join(t.TempDir(), "o.jsonl")
			args := append([]string{"--manifest", c.manifest, "--metric", "ssim2", "--out", out, "--backend", "auto",
				"--cache-dir", t.TempDir(), "--workers", "2", "--progress", "none"}, tc.args...)
			code, _, stderr := runCLI(t, deps, args...)
			if code != ExitOK {
				t.Fatalf("code %d, stderr:\n%s", code, stderr)
			}
			if rows := readAll(t, out); len(rows) != c.pairs {
				t.Fatalf("%d rows, want %d", len(rows), c.pairs)
			}
			if opened != tc.wantOrch || (b.prepares.Load() > 0) == tc.wantOrch {
				t.Fatalf("orchestrator opened %v (want %v), fake backend prepared %d", opened, tc.wantOrch, b.prepares.Load())
			}
		})
	}
}
