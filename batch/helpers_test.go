package batch

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// fakeBackend scores by the mean absolute difference of the samples, after
// an optional sleep, and counts how often it prepares a reference.
type fakeBackend struct {
	name      string
	delay     time.Duration
	prepDelay time.Duration // sleep in Prepare
	prepares  atomic.Int64
	scores    atomic.Int64
	live      atomic.Int64 // prepared references not yet released
	failOn    string       // a metric name that always fails
}

func (b *fakeBackend) Name() string { return b.name }
func (b *fakeBackend) Estimate(zenmetrics.Metric, int, int, zenmetrics.Mode) (int64, bool) {
	return 0, true
}
func (b *fakeBackend) Close() error { return nil }

func (b *fakeBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, _ zenmetrics.Options) (zenmetrics.Reference, error) {
	if m.String() == b.failOn {
		return nil, fmt.Errorf("%w: %s on %s", zenmetrics.ErrUnsupported, m, b.name)
	}
	if b.prepDelay > 0 {
		time.Sleep(b.prepDelay)
	}
	b.prepares.Add(1)
	b.live.Add(1)
	return &fakeRef{b: b, m: m, ref: ref}, nil
}

type fakeRef struct {
	b        *fakeBackend
	m        zenmetrics.Metric
	ref      *zenmetrics.Image
	released atomic.Bool
}

func (r *fakeRef) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	if r.released.Load() {
		return zenmetrics.Score{}, zenmetrics.ErrReleased
	}
	if r.b.delay > 0 {
		select {
		case <-time.After(r.b.delay):
		case <-ctx.Done():
			return zenmetrics.Score{}, ctx.Err()
		}
	}
	r.b.scores.Add(1)
	v := fakeScore(r.ref, dist)
	s := zenmetrics.Score{Metric: r.m, Value: v}
	if r.m == zenmetrics.Butteraugli {
		s.Extras = map[string]float64{"pnorm3": v / 2}
	}
	return s, nil
}

func (r *fakeRef) Release() {
	if !r.released.Swap(true) {
		r.b.live.Add(-1)
	}
}

func fakeScore(a, b *zenmetrics.Image) float64 {
	var sum float64
	for i := range a.Pix {
		sum += math.Abs(float64(a.Pix[i]) - float64(b.Pix[i]))
	}
	return sum / float64(len(a.Pix))
}

// corpus is a generated set of images and a manifest over them.
type corpus struct {
	dir      string
	manifest string
	pairs    int // rows of the manifest
	bad      int // of which fail (missing, corrupt, mismatched)
}

func writePNG(t testing.TB, path string, w, h int, seed int) {
	t.Helper()
	im := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := uint8((x*7 + y*13 + seed*29) % 256)
			im.Set(x, y, color.NRGBA{v, uint8(int(v) * 3 % 256), uint8(seed * 17), 255})
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, im); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// makeCorpus writes refs × variants images (NAME__ref.png, NAME__vK.png)
// and a TSV manifest listing them with relative paths; with bad, it adds a
// missing file, a corrupt file and a size mismatch.
func makeCorpus(t testing.TB, refs, variants int, bad bool) *corpus {
	t.Helper()
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	if err := os.MkdirAll(img, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("ref\tdist\n")
	c := &corpus{dir: dir, manifest: filepath.Join(dir, "manifest.tsv")}
	for r := 0; r < refs; r++ {
		name := fmt.Sprintf("im%03d", r)
		writePNG(t, filepath.Join(img, name+"__ref.png"), 24, 16, r)
		for v := 0; v < variants; v++ {
			dn := fmt.Sprintf("%s__v%d.png", name, v)
			writePNG(t, filepath.Join(img, dn), 24, 16, r+v+1)
			fmt.Fprintf(&b, "img/%s__ref.png\timg/%s\n", name, dn)
			c.pairs++
		}
	}
	if bad {
		writePNG(t, filepath.Join(img, "big__v0.png"), 30, 30, 1)
		if err := os.WriteFile(filepath.Join(img, "corrupt__v0.png"), []byte("\x89PNG\r\n\x1a\nnot really"), 0o644); err != nil {
			t.Fatal(err)
		}
		b.WriteString("img/im000__ref.png\timg/missing__v0.png\n")
		b.WriteString("img/im000__ref.png\timg/corrupt__v0.png\n")
		b.WriteString("img/im000__ref.png\timg/big__v0.png\n")
		c.pairs += 3
		c.bad = 3
	}
	if err := os.WriteFile(c.manifest, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// newFakeEngine returns an engine over one fake backend for every metric.
func newFakeEngine(t testing.TB, b *fakeBackend, workers int) *BackendEngine {
	t.Helper()
	e, err := NewBackendEngine(BackendEngineConfig{
		Backend: func(zenmetrics.Metric) (zenmetrics.Backend, error) { return b, nil },
		Workers: workers,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// readAll reads every row of an output file, failing the test on error.
func readAll(t testing.TB, path string) []Row {
	t.Helper()
	var rows []Row
	if err := readRowsFile(path, func(r Row) { rows = append(rows, r) }); err != nil {
		t.Fatal(err)
	}
	return rows
}

// checkExactlyOnce checks one row per (pair, metric) of the manifest, with
// the fake backend's score for the good pairs and errors for the bad.
func checkExactlyOnce(t testing.TB, c *corpus, rows []Row, metrics []zenmetrics.Metric) {
	t.Helper()
	pairs, err := ReadManifest(c.manifest, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[Key]Pair{}
	for _, p := range pairs {
		for _, m := range metrics {
			want[Key{p.ID, m.String()}] = p
		}
	}
	got := map[Key]int{}
	failed := 0
	var once sync.Once
	for _, r := range rows {
		got[r.Key()]++
		p, ok := want[r.Key()]
		if !ok {
			t.Errorf("row for unknown key %v", r.Key())
			continue
		}
		if r.Ref != p.Ref || r.Dist != p.Dist {
			t.Errorf("row %v has paths %s %s, want %s %s", r.Key(), r.Ref, r.Dist, p.Ref, p.Dist)
		}
		if !r.OK() {
			failed++
			continue
		}
		ref, err1 := decodeStd(p.RefPath)
		dist, err2 := decodeStd(p.DistPath)
		if err1 != nil || err2 != nil {
			t.Errorf("row %v scored but decoding fails: %v %v", r.Key(), err1, err2)
			continue
		}
		if w := fakeScore(ref, dist); *r.Score != w {
			once.Do(func() { t.Errorf("row %v score %v, want %v", r.Key(), *r.Score, w) })
		}
	}
	for k := range want {
		if got[k] != 1 {
			t.Errorf("key %v: %d rows, want exactly 1", k, got[k])
		}
	}
	if wantFailed := c.bad * len(metrics); failed != wantFailed {
		t.Errorf("%d error rows, want %d", failed, wantFailed)
	}
}
