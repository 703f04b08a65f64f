package main

import (
	"os"
	"syscall"
)

// stopSignals stop a warm-up cleanly (the bench stops at its next step and
// nothing half-measured is saved): SIGTERM, what Kubernetes, Slurm and
// systemd send first, is handled like Ctrl-C.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}
