// Command zmprobe prints what this machine can do as JSON: CPU (cpuid,
// cores, RAM) and every WebGPU adapter with its limits, advertised
// features, memory heaps, device init time and shader features verified by
// running tiny kernels (see capability.Probe).
//
//	zmprobe [-cpu-only] [-timeout 2m] [-compact]
//
// The Dawn library is found through $ZENMETRICS_WEBGPU_LIB, next to the
// executable, or the system loader's usual places.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/zenmetrics-go/zenmetrics/capability"
)

func main() {
	cpuOnly := flag.Bool("cpu-only", false, "probe the CPU only")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	compact := flag.Bool("compact", false, "one-line JSON")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := capability.Probe(ctx, capability.ProbeOptions{SkipGPU: *cpuOnly})
	if err != nil {
		fmt.Fprintln(os.Stderr, "zmprobe:", err)
		if rep == nil {
			os.Exit(1)
		}
	}
	enc := json.NewEncoder(os.Stdout)
	if !*compact {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, "zmprobe:", err)
		os.Exit(1)
	}
	if err != nil {
		os.Exit(1)
	}
}
