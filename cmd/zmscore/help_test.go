package main

import (
	"strings"
	"testing"
)

// TestHelpNamesEveryModeAndFlag: `zmscore --help` is where a new user
// meets the tool, so it must show each mode with a runnable-looking
// example and name every flag of every mode.
func TestHelpNamesEveryModeAndFlag(t *testing.T) {
	code, out, errOut := runCLI("--help")
	if code != 0 || errOut != "" {
		t.Fatalf("--help: exit %d, stderr %q", code, errOut)
	}
	// One example line per mode, as printed under "Examples:".
	examples := []string{
		"zmscore ref.png dist.png",                                     // pair mode
		"zmscore --json ref.png q20.jpg q50.jpg q80.webp",              // several DISTs
		"--distmap maps/{}.png ref.png out/*.png",                      // distance maps
		"zmscore --backend cpu --threads 4 ref.png dist.png",           // backends
		"--manifest pairs.tsv --metric ssim2,butteraugli --out scores", // batch
		"--out scores.parquet --resume",                                // resume
		"zmscore --ref-dir refs/ --dist-dir encoded/ --out scores.jsonl",
		"zmscore merge --manifest pairs.tsv",
		`echo '{"id":1,"ref":"ref.png","dist":"dist.png"}' | zmscore serve`, // serve
		"zmscore serve --listen 127.0.0.1:8765",
	}
	for _, e := range examples {
		if !strings.Contains(out, e) {
			t.Errorf("help lacks the example %q", e)
		}
	}
	// Every flag of pair mode (parseArgs) and of the batch modes
	// (batch.ParseFlags), written with two dashes as the text does.
	flags := []string{
		"metric", "backend", "json", "threads", "version", "help",
		"intensity-target", "pnorm", "distmap", "rawdistmap", "display",
		"manifest", "manifest-format", "ref-dir", "dist-dir", "pair-pattern", "ref-pattern",
		"out", "format", "resume", "force", "retry-failed", "workers", "decoders",
		"mem-budget", "cache-dir", "shard", "progress", "progress-interval",
		"flush-interval", "quiet", "stats",
	}
	for _, f := range flags {
		if !strings.Contains(out, "--"+f+" ") && !strings.Contains(out, "--"+f+",") && !strings.Contains(out, "--"+f+"\n") {
			t.Errorf("help does not name --%s", f)
		}
	}
	for _, b := range backendList {
		if !strings.Contains(out, "  "+b.name+" ") {
			t.Errorf("help does not list backend %q", b.name)
		}
	}
}
