package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/orchestrator"
	"github.com/zenmetrics-go/zenmetrics/serve"
)

// serveUsage is `zmscore serve --help`; the main help repeats its first
// lines.
const serveUsage = `Usage: zmscore serve [flags]

Keeps the backends, the GPU and prepared references warm and answers
scoring requests: one JSON object per line on stdin, one response per line
on stdout in completion order, each with its request's id. Errors are
responses with "error" and a typed "kind"; they never stop the server.

  {"id": 1, "ref": "src.png", "dist": "q30.png", "metric": "ssim2"}
  {"id": 2, "ref": "src.png", "dist": "q40.png", "metrics": ["ssim2", "butteraugli"],
   "options": {"pnorm": 6}}
  {"id": 3, "op": "stats"}

  -> {"id":1,"ref":"src.png","dist":"q30.png","results":[{"metric":"ssim2",
      "score":71.2,"backend":"cpu","ms":130.1,"ref_reused":false}],
      "ref_decoded_cached":false,"ms":160.3}

Kinds: bad_request, too_large, not_found, bad_input, size_mismatch,
unsupported, out_of_memory, device_lost, busy, shutting_down, canceled,
internal. "ref_reused" says the prepared reference came from the cache (by
pixel hash), "ref_decoded_cached" that the file was not decoded again (same
path, mtime and size).

Examples:
  zmscore serve                                  JSON lines on stdin/stdout
  zmscore serve --listen 127.0.0.1:8765          and HTTP: POST /score, GET /stats
  zmscore serve --listen 127.0.0.1:8765 --stdin=false   HTTP only, until SIGTERM
  curl -s -d '{"ref":"a.png","dist":"b.png"}' http://127.0.0.1:8765/score

Flags:
  --backend NAME        auto (GPUs when found, and the CPU) or cpu (default auto)
  --balance NAME        sharing among devices: adaptive (default), round-robin,
                        least-loaded, weighted
  --cache-dir DIR       capability profile folder (default: the user cache dir)
  --workers N           requests decoded and scored at once (default: CPUs, at least 2)
  --queue N             accepted requests waiting for a worker (default 64); when
                        full, reading stdin pauses and HTTP answers 503
  --max-request-bytes N longest request line or body (default 65536)
  --max-pixels N        largest image, in pixels (default 268435456)
  --ref-cache N         decoded references kept (default 16)
  --ref-cache-bytes N   bytes of decoded references kept (default 1073741824)
  --listen ADDR         also serve HTTP on ADDR, a loopback address such as
                        127.0.0.1:8765 (port 0: any free port, printed on stderr)
  --allow-remote        let --listen use a non-loopback address (see below)
  --stdin=false         do not read stdin (HTTP only); end with SIGINT/SIGTERM
  --shutdown-timeout D  at shutdown, how long to let accepted requests finish
                        before cancelling them (default 1m)

Shutdown: at the end of stdin, or on SIGINT/SIGTERM, the server stops
accepting requests, answers every accepted one, and exits 0; a second
signal cancels what is still running. The server has no authentication and
reads any file path a request names, with this user's rights: that is why
--listen refuses addresses other than loopback unless --allow-remote is
given (then put it behind a firewall or an authenticating proxy).
`

type serveOptions struct {
	backend, cacheDir, listen, balance     string
	workers, queue, maxRequest, refEntries int
	maxPixels, refBytes                    int64
	allowRemote, readStdin                 bool
	shutdownTimeout                        time.Duration
}

func newServeFlags(o *serveOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("zmscore serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.backend, "backend", "auto", "")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "")
	fs.StringVar(&o.balance, "balance", "adaptive", "")
	fs.IntVar(&o.workers, "workers", max(2, runtime.NumCPU()), "")
	fs.IntVar(&o.queue, "queue", 64, "")
	fs.IntVar(&o.maxRequest, "max-request-bytes", 64<<10, "")
	fs.Int64Var(&o.maxPixels, "max-pixels", 1<<28, "")
	fs.IntVar(&o.refEntries, "ref-cache", 16, "")
	fs.Int64Var(&o.refBytes, "ref-cache-bytes", 1<<30, "")
	fs.StringVar(&o.listen, "listen", "", "")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "")
	fs.BoolVar(&o.readStdin, "stdin", true, "")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", time.Minute, "")
	return fs
}

// checkListen refuses a non-loopback --listen address unless allowed,
// saying why: the server trusts whoever can reach it.
func checkListen(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT, e.g. 127.0.0.1:8765 (%v)", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if allowRemote {
		return nil
	}
	return fmt.Errorf("--listen %q is not a loopback address: the server has no authentication and "+
		"reads any file a request names, so anyone who can reach %s could read this user's files; "+
		"use 127.0.0.1:PORT (or [::1]:PORT), or pass --allow-remote behind a firewall or an authenticating proxy", addr, host)
}

// runServe is `zmscore serve`. sig delivers SIGINT/SIGTERM; nil means the
// process's own.
func runServe(args []string, stdin io.Reader, stdout, stderr io.Writer, sig <-chan os.Signal) int {
	var o serveOptions
	fs := newServeFlags(&o)
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "zmscore serve: "+format+"\n", a...)
		fmt.Fprintf(stderr, "Run 'zmscore serve --help' for usage.\n")
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, serveUsage)
			return 0
		}
		return fail("%v", err)
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case o.workers < 1, o.queue < 1, o.refEntries < 1:
		return fail("--workers, --queue and --ref-cache must be at least 1")
	case o.maxRequest < 256 || o.maxRequest > 64<<20:
		return fail("--max-request-bytes must be between 256 and 64 MiB, not %d", o.maxRequest)
	case o.maxPixels < 1 || o.maxPixels > imageio.DefaultMaxPixels:
		return fail("--max-pixels must be between 1 and %d, not %d", imageio.DefaultMaxPixels, o.maxPixels)
	case o.refBytes < 1:
		return fail("--ref-cache-bytes must be positive")
	case !o.readStdin && o.listen == "":
		return fail("--stdin=false needs --listen: there would be nothing to serve")
	case o.backend != "auto" && o.backend != "cpu":
		return fail("--backend %q: serve runs on the orchestrator, auto or cpu", o.backend)
	}
	balance, err := orchestrator.ParseBalance(o.balance)
	if err != nil {
		return fail("--balance: %v", err)
	}
	if o.listen != "" {
		if err := checkListen(o.listen, o.allowRemote); err != nil {
			return fail("%v", err)
		}
	}
	if sig == nil {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(ch)
		sig = ch
	}

	orch, err := orchestrator.New(context.Background(), orchestrator.Config{
		CacheDir: o.cacheDir, DisableGPU: o.backend == "cpu", ReadOnlyProfile: true, Balance: balance,
	})
	if err != nil {
		fmt.Fprintf(stderr, "zmscore serve: %v\n", err)
		return 1
	}
	defer orch.Close()
	srv, err := serve.New(serve.Config{Orchestrator: orch, Workers: o.workers, Queue: o.queue,
		MaxRequestBytes: o.maxRequest, MaxPixels: o.maxPixels, RefCacheEntries: o.refEntries, RefCacheBytes: o.refBytes})
	if err != nil {
		fmt.Fprintf(stderr, "zmscore serve: %v\n", err)
		return 1
	}

	var httpSrv *http.Server
	httpDone := make(chan struct{})
	if o.listen != "" {
		ln, err := net.Listen("tcp", o.listen)
		if err != nil {
			fmt.Fprintf(stderr, "zmscore serve: %v\n", err)
			srv.Shutdown(context.Background())
			return 1
		}
		httpSrv = &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second,
			MaxHeaderBytes: 16 << 10}
		fmt.Fprintf(stderr, "zmscore serve: listening on http://%s\n", ln.Addr())
		go func() {
			defer close(httpDone)
			if err := httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(stderr, "zmscore serve: http: %v\n", err)
			}
		}()
	} else {
		close(httpDone)
	}
	fmt.Fprintf(stderr, "zmscore serve: ready (%s; %d workers, queue %d)\n", strings.Join(orch.Backends(), ", "), o.workers, o.queue)

	// The end of stdin or the first signal starts the shutdown.
	stop, cancelStream := context.WithCancel(context.Background())
	streamDone := make(chan struct{})
	if o.readStdin {
		go func() {
			defer close(streamDone)
			if err := srv.ServeStream(stop, stdin, stdout); err != nil {
				fmt.Fprintf(stderr, "zmscore serve: reading stdin: %v\n", err)
			}
		}()
	}
	select {
	case <-streamDone:
	case s := <-sig:
		fmt.Fprintf(stderr, "zmscore serve: %v: finishing accepted requests (again to cancel them)\n", s)
	}
	cancelStream()

	ctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	go func() {
		select {
		case <-sig:
			fmt.Fprintf(stderr, "zmscore serve: cancelling running requests\n")
			cancel()
		case <-ctx.Done():
		}
	}()
	if httpSrv != nil {
		// Stops accepting connections and waits for the handlers, which
		// wait for their requests.
		if err := httpSrv.Shutdown(ctx); err != nil {
			httpSrv.Close()
		}
	}
	<-httpDone
	err = srv.Shutdown(ctx)
	st := srv.Stats()
	fmt.Fprintf(stderr, "zmscore serve: stopped after %d requests (%d errors, %d rejected busy)\n", st.Requests, st.Errors, st.Rejected)
	if err != nil {
		return 1
	}
	return 0
}
