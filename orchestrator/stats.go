package orchestrator

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DeviceStats is one slot's live statistics: a GPU adapter's slot or the
// CPU worker pool.
type DeviceStats struct {
	Name string `json:"name"`
	GPU  bool   `json:"gpu"`
	Lost bool   `json:"lost,omitempty"`
	// Workers is how many tasks the slot runs at once.
	Workers int `json:"workers"`
	// Tasks counts attempts that scored; Failures attempts that failed
	// (of which OOMs ran out of memory); Fallbacks tasks that left this
	// slot for another rung or device (refused before running, failed, or
	// moved off a lost device).
	Tasks     int64 `json:"tasks"`
	Failures  int64 `json:"failures"`
	OOMs      int64 `json:"ooms"`
	Fallbacks int64 `json:"fallbacks"`
	// Busy is the summed wall time of attempts (over all workers).
	Busy time.Duration `json:"busy_ns"`
	// QueueDepth is the tasks queued or running now; MaxQueueDepth the
	// most at once; RecentDepths the depth at the last few completions,
	// oldest first (a small time series for long batches).
	QueueDepth    int   `json:"queue_depth"`
	MaxQueueDepth int   `json:"max_queue_depth"`
	RecentDepths  []int `json:"recent_depths,omitempty"`
	// SweetSpot is the depth past which the slot counts as backed up
	// (GPU slots only).
	SweetSpot int `json:"sweet_spot,omitempty"`
	// EMAMpxPerS is the moving average of measured throughput per task,
	// in megapixels per second (0 before the first task).
	EMAMpxPerS float64 `json:"ema_mpx_per_s"`
}

// Stats reports every slot, GPU slots first, then the CPU pool.
func (o *Orchestrator) Stats() []DeviceStats {
	var out []DeviceStats
	add := func(s *slot) {
		_, workers := s.backlog()
		st := &s.st
		st.mu.Lock()
		d := DeviceStats{Name: s.name, GPU: s.gpu, Lost: s.lost.Load(), Workers: workers,
			Tasks: st.tasks, Failures: st.failures, OOMs: st.ooms, Fallbacks: st.fallbacks,
			Busy: st.busy, QueueDepth: st.depth, MaxQueueDepth: st.maxDepth}
		n := min(st.seriesN, seriesLen)
		for i := st.seriesN - n; i < st.seriesN; i++ {
			d.RecentDepths = append(d.RecentDepths, st.series[i%seriesLen])
		}
		if st.emaAll > 0 {
			d.EMAMpxPerS = 1e3 / st.emaAll // 1e9 ns/s ÷ ns/px ÷ 1e6 px/Mpx
		}
		st.mu.Unlock()
		if s.gpu {
			d.SweetSpot = o.sweetSpot(s)
		}
		out = append(out, d)
	}
	for _, s := range o.gpus {
		add(s)
	}
	if o.cpu != nil {
		add(o.cpu)
	}
	return out
}

// WritePrometheus writes stats in the Prometheus text exposition format
// (version 0.0.4), one gauge or counter family per field, labelled by
// device. Hand-written to keep the library free of a client dependency.
func WritePrometheus(w io.Writer, stats []DeviceStats) error {
	type fam struct {
		name, typ, help string
		val             func(DeviceStats) float64
	}
	fams := []fam{
		{"zenmetrics_tasks_total", "counter", "Attempts that scored.", func(d DeviceStats) float64 { return float64(d.Tasks) }},
		{"zenmetrics_failures_total", "counter", "Attempts that failed.", func(d DeviceStats) float64 { return float64(d.Failures) }},
		{"zenmetrics_ooms_total", "counter", "Attempts that ran out of memory.", func(d DeviceStats) float64 { return float64(d.OOMs) }},
		{"zenmetrics_fallbacks_total", "counter", "Tasks that left the device for another rung or device.", func(d DeviceStats) float64 { return float64(d.Fallbacks) }},
		{"zenmetrics_busy_seconds_total", "counter", "Summed wall time of attempts.", func(d DeviceStats) float64 { return d.Busy.Seconds() }},
		{"zenmetrics_queue_depth", "gauge", "Tasks queued or running now.", func(d DeviceStats) float64 { return float64(d.QueueDepth) }},
		{"zenmetrics_queue_depth_max", "gauge", "Most tasks queued or running at once.", func(d DeviceStats) float64 { return float64(d.MaxQueueDepth) }},
		{"zenmetrics_throughput_mpx_per_second", "gauge", "Moving average of measured throughput per task.", func(d DeviceStats) float64 { return d.EMAMpxPerS }},
		{"zenmetrics_device_lost", "gauge", "1 when the device was lost.", func(d DeviceStats) float64 {
			if d.Lost {
				return 1
			}
			return 0
		}},
	}
	var b strings.Builder
	for _, f := range fams {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for _, d := range stats {
			kind := "cpu"
			if d.GPU {
				kind = "gpu"
			}
			fmt.Fprintf(&b, "%s{device=%s,kind=%q} %s\n", f.name, promLabel(d.Name), kind,
				strconv.FormatFloat(f.val(d), 'g', -1, 64))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// promLabel quotes a label value as the exposition format wants:
// backslash, double quote and newline escaped.
func promLabel(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// MetricsHandler serves o.Stats() in the Prometheus text format.
func (o *Orchestrator) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = WritePrometheus(w, o.Stats())
	})
}

// ErrNotLoopback: a metrics address that is not a loopback one, without
// the caller saying it means it. Batch statistics name files and devices;
// they should not be on the network by accident.
var ErrNotLoopback = errors.New("orchestrator: metrics address is not loopback")

// CheckMetricsAddr accepts host:port on a loopback host (127.0.0.0/8,
// ::1, localhost); any other host needs allowRemote. An empty host (":9090",
// every interface) counts as remote.
func CheckMetricsAddr(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("metrics address %q: %w", addr, err)
	}
	if allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %q (use a 127.0.0.1 address, or force it)", ErrNotLoopback, addr)
}

// ServeMetrics listens on addr (checked by CheckMetricsAddr) and serves
// /metrics until the returned stop function is called. The listener is
// bound before it returns, so a busy port is an error here, not later.
func (o *Orchestrator) ServeMetrics(addr string, allowRemote bool) (bound string, stop func() error, err error) {
	if err := CheckMetricsAddr(addr, allowRemote); err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", o.MetricsHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), srv.Close, nil
}
