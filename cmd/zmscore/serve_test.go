package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildZmscore builds this command into a temporary folder once per test
// binary, so the server is tested as the external process clients run.
var buildOnce struct {
	sync.Once
	path string
	err  error
	out  []byte
}

func zmscoreBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs zmscore as a process; not with -short")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zmscore-serve-test")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "zmscore")
		if runtime.GOOS == "windows" {
			buildOnce.path += ".exe"
		}
		cmd := exec.Command("go", "build", "-o", buildOnce.path, ".")
		buildOnce.out, buildOnce.err = cmd.CombinedOutput()
	})
	if buildOnce.err != nil {
		t.Fatalf("go build: %v\n%s", buildOnce.err, buildOnce.out)
	}
	return buildOnce.path
}

type serveResult struct {
	Metric    string             `json:"metric"`
	Score     *float64           `json:"score"`
	Extras    map[string]float64 `json:"extras"`
	Backend   string             `json:"backend"`
	RefReused bool               `json:"ref_reused"`
	Error     string             `json:"error"`
	Kind      string             `json:"kind"`
}

type serveResponse struct {
	ID               json.RawMessage `json:"id"`
	Results          []serveResult   `json:"results"`
	RefDecodedCached *bool           `json:"ref_decoded_cached"`
	Stats            map[string]any  `json:"stats"`
	Error            string          `json:"error"`
	Kind             string          `json:"kind"`
}

// server is a running `zmscore serve`.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Scanner
	stderr *syncBuffer
	done   chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	cmd := exec.Command(zmscoreBinary(t), append([]string{"serve", "--backend", "cpu", "--cache-dir", t.TempDir()}, args...)...)
	cmd.Dir = filepath.Dir(tiny(t, "camera__ref.png"))
	s := &server{t: t, cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = s.stderr
	s.out = bufio.NewScanner(stdout)
	s.out.Buffer(make([]byte, 1<<16), 1<<20)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

func (s *server) send(lines ...string) {
	s.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(s.stdin, l+"\n"); err != nil {
			s.t.Fatalf("writing %q: %v", l, err)
		}
	}
}

// recv reads n responses (in completion order) and indexes them by id.
func (s *server) recv(n int) map[string]serveResponse {
	s.t.Helper()
	got := map[string]serveResponse{}
	for range n {
		if !s.out.Scan() {
			s.t.Fatalf("stdout ended after %d of %d responses (%v); stderr:\n%s", len(got), n, s.out.Err(), s.stderr.String())
		}
		var r serveResponse
		if err := json.Unmarshal(s.out.Bytes(), &r); err != nil {
			s.t.Fatalf("response %q: %v", s.out.Text(), err)
		}
		got[string(r.ID)] = r
	}
	return got
}

// wait waits for the process to exit and returns its exit code.
func (s *server) wait() int {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		s.t.Fatalf("server did not exit; stderr:\n%s", s.stderr.String())
	}
	return s.cmd.ProcessState.ExitCode()
}

// pairScore is pair mode's score for (ref, dist) on the CPU, in process:
// the server must give the same number (same backend, same code).
func pairScore(t *testing.T, ref, dist string) float64 {
	t.Helper()
	code, out, errOut := runCLI("--backend", "cpu", "--json", tiny(t, ref), tiny(t, dist))
	var r struct{ Score float64 }
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("pair mode: %d %s %s", code, out, errOut)
	}
	return r.Score
}

func TestServeStdio(t *testing.T) {
	s := startServer(t, "--workers", "2", "--max-request-bytes", "1024")
	// One request, then the same reference again: the second reuses the
	// decoded reference (same path, mtime, size) and the prepared one.
	s.send(`{"id":1,"ref":"camera__ref.png","dist":"camera__jpeg_q20.png"}`)
	first := s.recv(1)["1"]
	s.send(`{"id":2,"ref":"camera__ref.png","dist":"camera__jpeg_q20.png","metrics":["ssim2"]}`)
	second := s.recv(1)["2"]
	want := pairScore(t, "camera__ref.png", "camera__jpeg_q20.png")
	for i, r := range []serveResponse{first, second} {
		if r.Error != "" || len(r.Results) != 1 || r.Results[0].Score == nil || r.Results[0].Metric != "ssim2" {
			t.Fatalf("response %d: %+v", i+1, r)
		}
		// Same backend and code as pair mode: the same float64, exactly.
		if got := *r.Results[0].Score; got != want {
			t.Errorf("response %d: score %v, pair mode %v", i+1, got, want)
		}
	}
	if first.RefDecodedCached == nil || *first.RefDecodedCached || first.Results[0].RefReused {
		t.Errorf("first request claims a cache hit: %+v", first)
	}
	if second.RefDecodedCached == nil || !*second.RefDecodedCached || !second.Results[0].RefReused {
		t.Errorf("second request for the same reference missed the caches: decoded %v, prepared %v",
			second.RefDecodedCached, second.Results[0].RefReused)
	}

	// Errors are responses with a kind, and the server goes on.
	s.send(`this is not json`,
		`{"id":"typo","ref":"camera__ref.png","dist":"camera__jpeg_q20.png","metrix":"ssim2"}`,
		`{"id":"missing","ref":"camera__ref.png","dist":"no_such_file.png"}`,
		`{"id":"size","ref":"camera__ref.png","dist":"astronaut_crop256__ref.png"}`,
		`{"id":"metric","ref":"camera__ref.png","dist":"camera__jpeg_q20.png","metric":"nope"}`,
		`{"id":"big","ref":"`+strings.Repeat("x", 2000)+`.png","dist":"a.png"}`)
	errs := s.recv(6)
	for id, kind := range map[string]string{``: "", `"typo"`: "bad_request", `"missing"`: "not_found",
		`"size"`: "size_mismatch", `"metric"`: "bad_request"} {
		if id == `` {
			continue // checked below: two responses have no id
		}
		if r, ok := errs[id]; !ok || r.Kind != kind || r.Error == "" {
			t.Errorf("request %s: got %+v, want kind %s", id, r, kind)
		}
	}
	// The unparsable line and the oversized one have no id; the map keeps
	// one of them, so check their kinds by counting instead.
	if r := errs[""]; r.Kind != "bad_request" && r.Kind != "too_large" {
		t.Errorf("request without id: %+v", r)
	}

	// Concurrent requests: all answered, each with its own id and score.
	pairs := map[string][2]string{
		`"c1"`: {"camera__ref.png", "camera__jpeg_q20.png"},
		`"c2"`: {"astronaut_crop256__ref.png", "astronaut_crop256__jpeg_q20.png"},
		`"c3"`: {"astronaut_crop256__ref.png", "astronaut_crop256__webp_q75.png"},
		`"c4"`: {"astronaut_crop256__ref.png", "astronaut_crop256__jxl_d1.png"},
	}
	for id, p := range pairs {
		s.send(`{"id":` + id + `,"ref":"` + p[0] + `","dist":"` + p[1] + `"}`)
	}
	got := s.recv(len(pairs))
	for id, p := range pairs {
		r, ok := got[id]
		if !ok || r.Error != "" || len(r.Results) != 1 || r.Results[0].Score == nil {
			t.Fatalf("concurrent %s: %+v", id, r)
		}
		if w := pairScore(t, p[0], p[1]); *r.Results[0].Score != w {
			t.Errorf("concurrent %s: score %v, pair mode %v", id, *r.Results[0].Score, w)
		}
	}

	// The counters see the reuse.
	s.send(`{"id":"st","op":"stats"}`)
	st := s.recv(1)[`"st"`].Stats
	if st == nil || st["ref_decoded_hits"].(float64) < 1 || st["ref_prepared_hits"].(float64) < 1 {
		t.Errorf("stats: %v", st)
	}

	// A slow request in flight, then EOF: it is still answered, then the
	// server exits 0.
	s.send(`{"id":"last","ref":"camera__ref.png","dist":"camera__jpeg_q20.png","metric":"butteraugli"}`)
	s.stdin.Close()
	last := s.recv(1)[`"last"`]
	if last.Error != "" || len(last.Results) != 1 || last.Results[0].Score == nil || last.Results[0].Extras["pnorm3"] == 0 {
		t.Errorf("request in flight at EOF: %+v", last)
	}
	if code := s.wait(); code != 0 {
		t.Fatalf("exit %d after EOF; stderr:\n%s", code, s.stderr.String())
	}
	if !strings.Contains(s.stderr.String(), "stopped after") {
		t.Errorf("no shutdown summary on stderr:\n%s", s.stderr.String())
	}
}

func TestServeHTTP(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGTERM is not deliverable to a process on Windows")
	}
	s := startServer(t, "--listen", "127.0.0.1:0", "--stdin=false", "--max-request-bytes", "1024")
	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	var base string
	for deadline := time.Now().Add(time.Minute); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(s.stderr.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("no listening address on stderr:\n%s", s.stderr.String())
	}
	post := func(body string) (int, serveResponse) {
		t.Helper()
		resp, err := http.Post(base+"/score", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r serveResponse
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatalf("POST %s: status %d, body not JSON: %v", body, resp.StatusCode, err)
		}
		return resp.StatusCode, r
	}
	code, r := post(`{"id":1,"ref":"camera__ref.png","dist":"camera__jpeg_q20.png"}`)
	if code != 200 || r.Results[0].Score == nil || *r.Results[0].Score != pairScore(t, "camera__ref.png", "camera__jpeg_q20.png") {
		t.Fatalf("POST /score: %d %+v", code, r)
	}
	code, r = post(`{"id":2,"ref":"camera__ref.png","dist":"camera__jpeg_q20.png"}`)
	if code != 200 || !*r.RefDecodedCached || !r.Results[0].RefReused {
		t.Errorf("second POST for the same reference: %d %+v", code, r)
	}
	for body, want := range map[string]struct {
		code int
		kind string
	}{
		`{"id":3`: {400, "bad_request"},
		`{"id":4,"ref":"camera__ref.png","dist":"missing.png"}`:                  {404, "not_found"},
		`{"id":5,"ref":"` + strings.Repeat("y", 1100) + `","dist":"camera.png"}`: {413, "too_large"},
	} {
		if code, r := post(body); code != want.code || r.Kind != want.kind {
			t.Errorf("POST %.40s: %d %q, want %d %q", body, code, r.Kind, want.code, want.kind)
		}
	}
	resp, err := http.Get(base + "/stats")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /stats: %v %v", err, resp)
	}
	resp.Body.Close()

	// SIGTERM with a request in flight: it completes, then exit 0.
	inflight := make(chan int, 1)
	go func() {
		code, _ := post(`{"id":6,"ref":"camera__ref.png","dist":"camera__jpeg_q20.png","metric":"butteraugli"}`)
		inflight <- code
	}()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		r, err := http.Get(base + "/stats")
		if err != nil {
			break
		}
		var st map[string]any
		json.NewDecoder(r.Body).Decode(&st)
		r.Body.Close()
		if st["in_flight"].(float64) > 0 {
			break
		}
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := <-inflight; code != 200 {
		t.Errorf("request in flight at SIGTERM: status %d", code)
	}
	if code := s.wait(); code != 0 {
		t.Fatalf("exit %d after SIGTERM; stderr:\n%s", code, s.stderr.String())
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:8765", ":8765"} {
		var out, errOut bytes.Buffer
		code := runServe([]string{"--listen", addr}, strings.NewReader(""), &out, &errOut, nil)
		if code != 2 || !strings.Contains(errOut.String(), "not a loopback address") || !strings.Contains(errOut.String(), "--allow-remote") {
			t.Errorf("--listen %s: exit %d, stderr %q", addr, code, errOut.String())
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0"} {
		if err := checkListen(addr, false); err != nil {
			t.Errorf("--listen %s refused: %v", addr, err)
		}
	}
	if err := checkListen("0.0.0.0:0", true); err != nil {
		t.Errorf("--allow-remote did not allow: %v", err)
	}
}

func TestServeHelpNamesEveryFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runServe([]string{"--help"}, strings.NewReader(""), &out, &errOut, nil); code != 0 {
		t.Fatalf("serve --help: exit %d %s", code, errOut.String())
	}
	var o serveOptions
	newServeFlags(&o).VisitAll(func(f *flag.Flag) {
		if !strings.Contains(out.String(), "--"+f.Name) {
			t.Errorf("serve --help does not name --%s", f.Name)
		}
	})
}
