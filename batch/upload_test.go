package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// meteredBackend is a fakeBackend that measures its uploads as the WebGPU
// backend does (UploadMeter): each Score "uploads" the distorted image's
// bytes, sleeping upload, and each Prepare the reference's, booked apart.
type meteredBackend struct {
	*fakeBackend
	upload time.Duration

	n, ns, bytes          atomic.Int64
	refN, refNs, refBytes atomic.Int64
}

var _ UploadMeter = (*meteredBackend)(nil)

func (m *meteredBackend) UploadStats() webgpu.UploadStats {
	return webgpu.UploadStats{Count: m.n.Load(), Total: time.Duration(m.ns.Load()), Bytes: m.bytes.Load(),
		RefCount: m.refN.Load(), RefTotal: time.Duration(m.refNs.Load()), RefBytes: m.refBytes.Load()}
}

func (m *meteredBackend) Prepare(ctx context.Context, mt zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	r, err := m.fakeBackend.Prepare(ctx, mt, ref, opt)
	if err != nil {
		return nil, err
	}
	m.refN.Add(1)
	m.refNs.Add(int64(time.Millisecond))
	m.refBytes.Add(int64(len(ref.Pix)))
	return &meteredRef{Reference: r, m: m}, nil
}

type meteredRef struct {
	zenmetrics.Reference
	m *meteredBackend
}

func (r *meteredRef) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	t0 := time.Now()
	time.Sleep(r.m.upload)
	r.m.n.Add(1)
	r.m.ns.Add(int64(time.Since(t0)))
	r.m.bytes.Add(int64(len(dist.Pix)))
	return r.Reference.Score(ctx, dist)
}

// newMetered is a metered backend whose counters already hold uploads from
// before the run, which the run must not count.
func newMetered(upload, delay time.Duration) *meteredBackend {
	m := &meteredBackend{fakeBackend: &fakeBackend{name: "webgpu:fake", delay: delay}, upload: upload}
	m.n.Store(1000)
	m.ns.Store(int64(time.Hour))
	m.bytes.Store(1 << 40)
	m.refN.Store(7)
	return m
}

// TestStagesUploadMeasured runs a batch on a backend that measures its
// uploads and checks that the stages carry the run's uploads (not those
// from before), that they are part of the score time, and that the table
// and the JSON show them.
func TestStagesUploadMeasured(t *testing.T) {
	c := makeCorpus(t, 3, 4, false) // 12 pairs of 24×16 images
	m := newMetered(5*time.Millisecond, 10*time.Millisecond)
	pairs, err := ReadManifest(c.manifest, "")
	if err != nil {
		t.Fatal(err)
	}
	im, err := decodeStd(pairs[0].DistPath)
	if err != nil {
		t.Fatal(err)
	}
	pix := int64(len(im.Pix))
	e, err := NewBackendEngine(BackendEngineConfig{
		Backend: func(zenmetrics.Metric) (zenmetrics.Backend, error) { return m, nil },
		Workers: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	sum, err := Run(context.Background(), Config{Pairs: pairs, Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
		Out: filepath.Join(t.TempDir(), "out.jsonl"), Engine: e, Decoders: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.OK != 12 {
		t.Fatalf("summary %+v", sum)
	}
	s := sum.Stages
	if s.Upload != UploadMeasured || s.Uploads != 12 || s.UploadBytes != 12*pix {
		t.Errorf("upload %q: %d uploads of %d B, want %q: 12 of %d B", s.Upload, s.Uploads, s.UploadBytes, UploadMeasured, 12*pix)
	}
	if lo := 12 * 0.005; !within(s.UploadTime, lo) {
		t.Errorf("upload %.3f s, want about %.3f s", s.UploadTime, lo)
	}
	// The upload is inside Score: score ≥ upload + the fake's own delay,
	// and the score row's time and the upload add up to Score.
	if s.Score < s.UploadTime+12*0.010 {
		t.Errorf("score %.3f s does not contain upload %.3f s + 12 × 10 ms", s.Score, s.UploadTime)
	}
	if excl := s.ScoreExclUpload(); math.Abs(excl+s.UploadTime-s.Score) > 1e-9 || !within(excl, 12*0.010) {
		t.Errorf("score excl. upload %.3f s + upload %.3f s vs score %.3f s", excl, s.UploadTime, s.Score)
	}

	var w bytes.Buffer
	PrintStages(&w, &sum)
	table := w.String()
	var upRow, scoreRow string
	for _, l := range strings.Split(table, "\n") {
		switch {
		case strings.HasPrefix(l, "  upload "):
			upRow = l
		case strings.HasPrefix(l, "  score "):
			scoreRow = l
		}
	}
	if !strings.Contains(upRow, " 12 ") || !strings.Contains(upRow, fmt.Sprintf("%.3f", s.UploadTime)) ||
		!strings.Contains(upRow, fmt.Sprintf("%.3f ms", 1000*s.UploadTime/12)) ||
		!strings.Contains(upRow, fmt.Sprintf("%.1f MB/s", float64(s.UploadBytes)/1e6/s.UploadTime)) {
		t.Errorf("upload row %q in\n%s", upRow, table)
	}
	if !strings.Contains(scoreRow, fmt.Sprintf("%.2f", s.ScoreExclUpload())) || !strings.Contains(scoreRow, "excl. upload") ||
		strings.Contains(table, "included in score") {
		t.Errorf("score row %q in\n%s", scoreRow, table)
	}
	if strings.Index(table, "\n  upload ") > strings.Index(table, "\n  score ") {
		t.Errorf("upload row after the score row:\n%s", table)
	}

	js, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	if got["upload"] != UploadMeasured || got["uploads"] != 12.0 || got["upload_bytes"] != float64(12*pix) ||
		got["upload_s"] != s.UploadTime || got["score_s"] != s.Score {
		t.Errorf("JSON stages %s", js)
	}
}

// TestStagesUploadNotMeasured: a backend that does not measure uploads (the
// CPU) keeps the table and JSON as they were: no upload row, the score row
// says the upload is included, the new JSON fields are 0.
func TestStagesUploadNotMeasured(t *testing.T) {
	c := makeCorpus(t, 1, 3, false)
	sum := runStages(t, c, &fakeBackend{name: "cpu"}, 1, nil)
	s := sum.Stages
	if s.Upload != UploadInScore || s.Uploads != 0 || s.UploadTime != 0 || s.UploadBytes != 0 || s.ScoreExclUpload() != s.Score {
		t.Errorf("stages %+v", s)
	}
	var w bytes.Buffer
	PrintStages(&w, &sum)
	if table := w.String(); strings.Contains(table, "\n  upload ") || !strings.Contains(table, "(upload: included in score)") {
		t.Errorf("table\n%s", table)
	}
	js, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"upload":"included in score"`, `"uploads":0`, `"upload_s":0`, `"upload_bytes":0`} {
		if !strings.Contains(string(js), k) {
			t.Errorf("JSON stages lack %s: %s", k, js)
		}
	}
}

// TestCLIStatsUploadRow: zmscore --stats on a backend that measures its
// uploads prints the upload row, and the JSON summary carries it.
func TestCLIStatsUploadRow(t *testing.T) {
	c := makeCorpus(t, 2, 3, false)
	m := newMetered(time.Millisecond, 0)
	deps := Deps{OpenBackend: func(BackendOptions) (zenmetrics.Backend, error) { return m, nil }, Decode: decodeStd,
		Getenv: func(string) string { return "" }}
	out := filepath.Join(t.TempDir(), "o.jsonl")
	code, _, stderr := runCLI(t, deps, "--manifest", c.manifest, "--out", out, "--progress", "json", "--stats")
	if code != ExitOK {
		t.Fatalf("code %d\n%s", code, stderr)
	}
	for _, want := range []string{"\n  upload         6 ", "host side; the GPU copy is in score", "(excl. upload; "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, stderr)
		}
	}
	var last struct {
		Stages *Stages `json:"stages"`
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.HasPrefix(l, `{"type":"summary"`) {
			if err := json.Unmarshal([]byte(l), &last); err != nil {
				t.Fatal(err)
			}
		}
	}
	if last.Stages == nil || last.Stages.Upload != UploadMeasured || last.Stages.Uploads != 6 || last.Stages.UploadTime <= 0 {
		t.Errorf("JSON summary stages %+v\n%s", last.Stages, stderr)
	}
}

// TestEngineUploadsDelta: the engine counts each metered backend from its
// first use, and not a backend that does not measure.
func TestEngineUploadsDelta(t *testing.T) {
	m := newMetered(0, 0)
	plain := &fakeBackend{name: "cpu"}
	e, err := NewBackendEngine(BackendEngineConfig{Backend: func(mt zenmetrics.Metric) (zenmetrics.Backend, error) {
		if mt == zenmetrics.Butteraugli {
			return plain, nil
		}
		return m, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, ok := e.Uploads(); ok {
		t.Error("Uploads ok before any backend was used")
	}
	ref, dist := zenmetrics.NewImage(8, 8, zenmetrics.RGB8), zenmetrics.NewImage(8, 8, zenmetrics.RGB8)
	dist.Pix[0] = 9
	ctx := context.Background()
	for i, mt := range []zenmetrics.Metric{zenmetrics.Butteraugli, zenmetrics.SSIMULACRA2, zenmetrics.SSIMULACRA2} {
		if err := e.Submit(ctx, Job{Tag: uint64(i), Metric: mt, RefKey: "r", Ref: ref, Dist: dist}); err != nil {
			t.Fatal(err)
		}
		if r, err := e.Next(ctx); err != nil || r.Err != nil {
			t.Fatalf("job %d: %v %v", i, err, r.Err)
		}
	}
	u, ok := e.Uploads()
	if !ok || u.Count != 2 || u.Bytes != 2*192 || u.RefCount != 1 || u.RefBytes != 192 {
		t.Errorf("Uploads = %+v, %v; want 2 uploads of 192 B and 1 reference", u, ok)
	}
}
