package batch

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zeebo/xxh3"
)

// Shard selects the pairs one of Count cooperating runs scores: those whose
// ShardOf(id, Count) is Index. The zero value (and Count 1) means all pairs.
type Shard struct {
	Index, Count int
}

// All reports whether the shard covers every pair.
func (s Shard) All() bool { return s.Count <= 1 }

// Contains reports whether the pair with this id belongs to the shard.
func (s Shard) Contains(id string) bool { return s.All() || ShardOf(id, s.Count) == s.Index }

func (s Shard) String() string {
	if s.All() {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Tag is the form used in file names: "shard-0003-of-0016".
func (s Shard) Tag() string {
	if s.All() {
		return "shard-0000-of-0001"
	}
	return fmt.Sprintf("shard-%04d-of-%04d", s.Index, s.Count)
}

// ShardOf is the shard of a pair id among n: XXH3-64 of the id modulo n.
// It depends on nothing but the id, so every machine computes the same
// partition of a manifest.
func ShardOf(id string, n int) int {
	if n <= 1 {
		return 0
	}
	return int(xxh3.HashString(id) % uint64(n))
}

// ParseShard parses "i/n" with 0 ≤ i < n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("bad shard %q: want i/n with 0 <= i < n", s)
	}
	return Shard{i, n}, nil
}

// Environment variables read by ShardFromEnv.
const (
	// EnvShards is the shard count for a Kubernetes Indexed Job, which
	// exposes only the index (JOB_COMPLETION_INDEX); set it to the Job's
	// spec.completions.
	EnvShards = "ZENMETRICS_SHARDS"
	// EnvShard overrides everything with "i/n".
	EnvShard = "ZENMETRICS_SHARD"
)

// ShardFromEnv finds the shard from the environment when --shard is not
// given, in this order:
//
//  1. ZENMETRICS_SHARD="i/n".
//  2. Kubernetes Indexed Job: JOB_COMPLETION_INDEX is i; the count comes
//     from ZENMETRICS_SHARDS (Kubernetes does not expose completions as a
//     variable, so set it to spec.completions in the pod template).
//  3. Slurm job array: i = (SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN) /
//     SLURM_ARRAY_TASK_STEP (step 1 when unset), n = SLURM_ARRAY_TASK_COUNT
//     (ZENMETRICS_SHARDS overrides it). So --array=1-16 and --array=0-15
//     both give shards 0..15 of 16. Arrays given as lists ("1,4,9") cannot
//     be mapped and are refused when i falls outside 0..n-1.
//
// found is false when none of these is set.
func ShardFromEnv(getenv func(string) string) (s Shard, found bool, err error) {
	if v := getenv(EnvShard); v != "" {
		s, err := ParseShard(v)
		if err != nil {
			return Shard{}, true, fmt.Errorf("%s: %w", EnvShard, err)
		}
		return s, true, nil
	}
	atoi := func(name string) (int, bool, error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, true, fmt.Errorf("%s=%q is not an integer", name, v)
		}
		return n, true, nil
	}
	count, haveCount, err := atoi(EnvShards)
	if err != nil {
		return Shard{}, true, err
	}
	if idx, ok, err := atoi("JOB_COMPLETION_INDEX"); ok || err != nil {
		if err != nil {
			return Shard{}, true, err
		}
		if !haveCount {
			return Shard{}, true, fmt.Errorf("JOB_COMPLETION_INDEX is set but %s is not: set it to the Job's spec.completions", EnvShards)
		}
		return checkShard(idx, count, "JOB_COMPLETION_INDEX")
	}
	if id, ok, err := atoi("SLURM_ARRAY_TASK_ID"); ok || err != nil {
		if err != nil {
			return Shard{}, true, err
		}
		lo, _, err := atoi("SLURM_ARRAY_TASK_MIN")
		if err != nil {
			return Shard{}, true, err
		}
		step, haveStep, err := atoi("SLURM_ARRAY_TASK_STEP")
		if err != nil {
			return Shard{}, true, err
		}
		if !haveStep || step < 1 {
			step = 1
		}
		n, haveN, err := atoi("SLURM_ARRAY_TASK_COUNT")
		if err != nil {
			return Shard{}, true, err
		}
		if haveCount {
			n, haveN = count, true
		}
		if !haveN {
			return Shard{}, true, fmt.Errorf("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not")
		}
		if (id-lo)%step != 0 {
			return Shard{}, true, fmt.Errorf("SLURM_ARRAY_TASK_ID=%d is not on the array's step %d from %d: use --shard", id, step, lo)
		}
		return checkShard((id-lo)/step, n, "SLURM_ARRAY_TASK_ID")
	}
	return Shard{}, false, nil
}

func checkShard(i, n int, from string) (Shard, bool, error) {
	if n < 1 || i < 0 || i >= n {
		return Shard{}, true, fmt.Errorf("%s gives shard %d of %d, out of range: use --shard i/n", from, i, n)
	}
	return Shard{i, n}, true, nil
}

// ShardPath puts the shard into an output path: "{shard}" is replaced by
// s.Tag(); without a placeholder and with more than one shard, ".TAG" is
// inserted before the extension (out.jsonl → out.shard-0003-of-0016.jsonl),
// so shards sharing a folder never write the same file.
func ShardPath(path string, s Shard) string {
	if strings.Contains(path, "{shard}") {
		return strings.ReplaceAll(path, "{shard}", s.Tag())
	}
	if s.All() || path == "-" {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + s.Tag() + ext
}
