package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
	"github.com/zenmetrics-go/zenmetrics/orchestrator"
)

// gatedServer is a server with one worker and a queue of one whose
// decoding waits for gate, so the tests control exactly when work is
// stuck.
func gatedServer(t *testing.T) (*Server, chan struct{}) {
	t.Helper()
	o, err := orchestrator.New(context.Background(), orchestrator.Config{DisableGPU: true, CacheDir: t.TempDir(), ReadOnlyProfile: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	gate := make(chan struct{})
	s, err := New(Config{Orchestrator: o, Workers: 1, Queue: 1, MaxRequestBytes: 512,
		Decode: func(p string, opt imageio.Options) (*zenmetrics.Image, error) {
			<-gate
			return imageio.DecodeFileOptions(p, opt)
		}})
	if err != nil {
		t.Fatal(err)
	}
	return s, gate
}

func req(t *testing.T, id int) string {
	ref := shared.Testdata(t, "tiny", "camera__ref.png")
	dist := shared.Testdata(t, "tiny", "camera__jpeg_q20.png")
	return fmt.Sprintf(`{"id":%d,"ref":%q,"dist":%q}`+"\n", id, ref, dist)
}

// TestStreamBackpressure: with the worker stuck and the queue full, the
// stream reader stops reading, so the client's writes block (a pipe holds
// them back); when work resumes every request is answered.
func TestStreamBackpressure(t *testing.T) {
	s, gate := gatedServer(t)
	pr, pw := io.Pipe()
	outR, outW := io.Pipe()
	go s.ServeStream(context.Background(), pr, outW)
	var written atomic.Int32
	const n = 6
	lines := make([]string, n)
	for i := range lines {
		lines[i] = req(t, i)
	}
	go func() {
		for _, l := range lines {
			if _, err := io.WriteString(pw, l); err != nil {
				return
			}
			written.Add(1)
		}
		pw.Close()
	}()
	// One request with the worker, one in the queue, one read and waiting
	// to be queued: three writes complete, the fourth cannot.
	for deadline := time.Now().Add(10 * time.Second); written.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // give a wrong reader time to read on
	if w := written.Load(); w != 3 {
		t.Fatalf("%d requests written while the queue was full; want 3 (the reader must stop)", w)
	}
	close(gate)
	dec := json.NewDecoder(outR)
	seen := map[string]bool{}
	for range n {
		var r Response
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r.Error != "" || len(r.Results) != 1 || r.Results[0].Score == nil {
			t.Errorf("response %s: %+v", r.ID, r)
		}
		seen[string(r.ID)] = true
	}
	if len(seen) != n {
		t.Errorf("answered ids %v, want %d distinct", seen, n)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestHTTPBusy: with the worker stuck and the queue full, HTTP answers 503
// at once with Retry-After; the accepted requests are answered after.
func TestHTTPBusy(t *testing.T) {
	s, gate := gatedServer(t)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	codes := make(chan int, 2)
	for i := range 2 {
		body := req(t, i)
		go func() {
			resp, err := http.Post(ts.URL+"/score", "application/json", strings.NewReader(body))
			if err != nil {
				codes <- -1
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if st := s.Stats(); st.InFlight == 1 && st.Queued == 1 {
			break
		}
	}
	resp, err := http.Post(ts.URL+"/score", "application/json", strings.NewReader(req(t, 9)))
	if err != nil {
		t.Fatal(err)
	}
	var r Response
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || r.Kind != KindBusy || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("full queue: status %d kind %q Retry-After %q; want 503 busy", resp.StatusCode, r.Kind, resp.Header.Get("Retry-After"))
	}
	close(gate)
	for range 2 {
		if c := <-codes; c != http.StatusOK {
			t.Errorf("accepted request: status %d", c)
		}
	}
	if st := s.Stats(); st.Rejected != 1 {
		t.Errorf("rejected %d, want 1", st.Rejected)
	}
	s.Shutdown(context.Background())
	// After shutdown nothing is accepted.
	if err := s.accept(Request{}, func(Response) {}, true); err != errStopping {
		t.Errorf("accept after Shutdown: %v", err)
	}
}

func TestReadLineBounds(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 5000) + "\nafter\nlast"
	br := bufio.NewReaderSize(strings.NewReader(in), 101)
	var lines []string
	var long []bool
	for {
		l, tooLong, err := readLine(br, 100)
		if len(l) > 0 || tooLong {
			lines, long = append(lines, string(l)), append(long, tooLong)
		}
		if err != nil {
			break
		}
	}
	if fmt.Sprint(lines) != "[short  after last]" || fmt.Sprint(long) != "[false true false false]" {
		t.Fatalf("lines %q, too long %v", lines, long)
	}
}
