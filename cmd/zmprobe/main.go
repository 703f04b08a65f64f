// Command zmprobe prints what this machine can do as JSON: CPU (cpuid,
// cores, RAM) and every WebGPU adapter with its limits, advertised
// features, memory heaps, device init time and shader features verified by
// running tiny kernels (see capability.Probe).
//
//	zmprobe [--cpu-only] [--timeout 2m] [--compact] [--version] [--help]
//
// "cuda" lists the CUDA devices (name, compute capability, memory), the
// driver and NVRTC, or why they could not be loaded.
//
// The Dawn library is found through $ZENMETRICS_WEBGPU_LIB, next to the
// executable, or the system loader's usual places; the report's "runtime"
// says which file and which ABI table were used.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	ver "github.com/zenmetrics-go/zenmetrics/internal/version"
)

// usageText is the --help text; it names every flag parse defines (the
// test checks that).
const usageText = `Usage: zmprobe [flags]

Prints what this machine can do, as JSON on stdout: the CPU (model, cpuid
features, cores, RAM) and every WebGPU adapter with its limits, features,
memory heaps, device start-up time and the shader features verified by
running tiny kernels; and the CUDA devices ("cuda": name, compute
capability, free and total memory, driver and NVRTC versions, or why the
driver could not be loaded). Use it to see why zmscore picks the backend it picks,
or to attach to a bug report.

Examples:
  zmprobe                          everything, indented JSON
  zmprobe --cpu-only --compact     the CPU only, one line
  ZENMETRICS_WEBGPU_LIB=/opt/dawn/libwebgpu_wrapper.so zmprobe --timeout 30s

Flags:
  --cpu-only       probe the CPU only (no WebGPU or CUDA library is loaded)
  --timeout D      give up after this long, e.g. 30s (default 2m)
  --compact        one-line JSON instead of indented
  --version        print the version and exit
  --help           print this help and exit

The Dawn library (libwebgpu_wrapper.so) is found through
$ZENMETRICS_WEBGPU_LIB, next to the executable, or the system loader's
usual places (libwebgpu_wrapper.dylib on macOS, webgpu_wrapper.dll on
Windows); "runtime" names the file used, the ABI table picked from its
exports and the npm package beside it. Problems finding or using it are
listed under "problems".

Exit status: 0 probed, 1 the probe failed (what was found is still
printed), 2 usage error.
`

type options struct {
	cpuOnly, compact, version bool
	timeout                   time.Duration
}

// newFlags defines zmprobe's flags on a fresh set.
func newFlags(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("zmprobe", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&o.cpuOnly, "cpu-only", false, "")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "")
	fs.BoolVar(&o.compact, "compact", false, "")
	fs.BoolVar(&o.version, "version", false, "")
	return fs
}

// parse reads the command line; done is true when the command is finished
// (help, version or a usage error) with exit status code.
func parse(args []string, stdout, stderr io.Writer) (o options, done bool, code int) {
	fs := newFlags(&o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return o, true, 0
		}
		fmt.Fprintf(stderr, "zmprobe: %v\nRun 'zmprobe --help' for usage.\n", err)
		return o, true, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "zmprobe: unexpected argument %q\nRun 'zmprobe --help' for usage.\n", fs.Arg(0))
		return o, true, 2
	}
	if o.version {
		fmt.Fprintln(stdout, ver.Line("zmprobe"))
		return o, true, 0
	}
	if o.timeout <= 0 {
		fmt.Fprintf(stderr, "zmprobe: --timeout must be positive, not %v\n", o.timeout)
		return o, true, 2
	}
	return o, false, 0
}

func main() {
	opt, done, code := parse(os.Args[1:], os.Stdout, os.Stderr)
	if done {
		os.Exit(code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opt.timeout)
	defer cancel()
	rep, err := capability.Probe(ctx, capability.ProbeOptions{SkipGPU: opt.cpuOnly})
	if err != nil {
		fmt.Fprintln(os.Stderr, "zmprobe:", err)
		if rep == nil {
			os.Exit(1)
		}
	}
	out := struct {
		*capability.Report
		CUDA *cuda.Report `json:"cuda,omitempty"`
	}{Report: rep}
	if !opt.cpuOnly {
		c := cuda.ProbeReport()
		out.CUDA = &c
	}
	enc := json.NewEncoder(os.Stdout)
	if !opt.compact {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "zmprobe:", err)
		os.Exit(1)
	}
	if err != nil {
		os.Exit(1)
	}
}
