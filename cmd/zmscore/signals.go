package main

import (
	"os"
	"syscall"
)

// stopSignals end a run cleanly: the rows finished so far are flushed and
// checkpointed, the summary is printed, and the exit status is 1
// ("interrupted"); a rerun with --resume goes on from there. SIGTERM is
// what Kubernetes, Slurm and systemd send first, so it is handled exactly
// like Ctrl-C. (Windows delivers only os.Interrupt; listing SIGTERM there
// is harmless.)
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}
