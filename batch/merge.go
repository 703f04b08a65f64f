package batch

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/zenmetrics-go/zenmetrics"
)

// MergeConfig describes `zmscore merge`.
type MergeConfig struct {
	// Inputs are shard outputs in any format (detected from content).
	Inputs []string
	// Out is the merged file, written to a temporary name and renamed.
	Out string
	// Format of Out; "" chooses by extension (JSONL when none).
	Format Format
	// Pairs and Metrics, when given, are what the merged output should
	// cover (the manifest and --metric of the shard runs): missing and
	// extra rows are counted against them.
	Pairs   []Pair
	Metrics []zenmetrics.Metric
	// Log receives a line per problem (nil: none).
	Log io.Writer
}

// MergeReport says what merge found. Missing, Conflicts and Failed are
// what makes the CLI exit with 3.
type MergeReport struct {
	Files int `json:"files"`
	Read  int `json:"rows_read"`
	Rows  int `json:"rows_written"`
	// Duplicates are rows whose key was already seen (dropped); Conflicts
	// are those among them whose score or error differs from the kept row.
	Duplicates int `json:"duplicates"`
	Conflicts  int `json:"conflicts"`
	// Missing are (pair, metric) of the manifest with no row; Extra are
	// rows whose key the manifest does not call for (kept).
	Missing int `json:"missing"`
	Extra   int `json:"extra"`
	// Failed are error rows in the merged output.
	Failed      int   `json:"failed"`
	MissingKeys []Key `json:"-"`
}

// Merge combines shard outputs: one row per (id, metric), a scored row
// preferred over an error row, otherwise the first seen.
func Merge(cfg MergeConfig) (MergeReport, error) {
	var rep MergeReport
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "zmscore merge: "+format+"\n", a...)
		}
	}
	if cfg.Out == "" {
		return rep, &ConfigError{"merge: no output file (--out)"}
	}
	if len(cfg.Inputs) == 0 {
		return rep, &ConfigError{"merge: no input files"}
	}
	// The merged file has one writer, like a run's output; and a shard
	// whose run still holds its lock is not finished (its lock file
	// exists then; none is created for a check).
	lk, err := lockOutput(cfg.Out)
	if err != nil {
		return rep, err
	}
	defer lk.Unlock()
	for _, in := range cfg.Inputs {
		if _, err := os.Stat(lockPath(in)); err != nil {
			continue
		}
		l, err := lockOutput(in)
		if err != nil {
			return rep, fmt.Errorf("merge: input %w", err)
		}
		l.Unlock()
	}
	format := cfg.Format
	if format == "" {
		format = JSONL
		if f, ok := FormatFromPath(cfg.Out); ok && f != TSV {
			format = f
		}
	}
	var rows []Row
	index := map[Key]int{}
	for _, in := range cfg.Inputs {
		rep.Files++
		err := readRowsFile(in, func(r Row) {
			rep.Read++
			i, dup := index[r.Key()]
			if !dup {
				index[r.Key()] = len(rows)
				rows = append(rows, r)
				return
			}
			rep.Duplicates++
			old := rows[i]
			if !sameResult(&old, &r) {
				rep.Conflicts++
				logf("conflict for %s/%s: %s vs %s (in %s)", r.ID, r.Metric, describe(&old), describe(&r), in)
			}
			if !old.OK() && r.OK() {
				rows[i] = r
			}
		})
		if err != nil {
			return rep, fmt.Errorf("merge: %w (finish an interrupted shard with --resume first)", err)
		}
	}
	if len(cfg.Pairs) > 0 {
		want := map[Key]bool{}
		for _, p := range cfg.Pairs {
			ms := p.Metrics
			if len(ms) == 0 {
				ms = cfg.Metrics
			}
			for _, m := range ms {
				k := Key{p.ID, m.String()}
				want[k] = true
				if _, ok := index[k]; !ok {
					rep.Missing++
					rep.MissingKeys = append(rep.MissingKeys, k)
				}
			}
		}
		for k := range index {
			if !want[k] {
				rep.Extra++
			}
		}
		sort.Slice(rep.MissingKeys, func(i, j int) bool {
			a, b := rep.MissingKeys[i], rep.MissingKeys[j]
			return a.ID < b.ID || a.ID == b.ID && a.Metric < b.Metric
		})
		for i, k := range rep.MissingKeys {
			if i == 20 {
				logf("... and %d more missing", len(rep.MissingKeys)-20)
				break
			}
			logf("missing %s/%s", k.ID, k.Metric)
		}
	}
	for i := range rows {
		if !rows[i].OK() {
			rep.Failed++
		}
	}
	rep.Rows = len(rows)
	if err := writeRowsAtomic(cfg.Out, format, rows); err != nil {
		return rep, err
	}
	return rep, nil
}

func sameResult(a, b *Row) bool {
	if a.OK() != b.OK() {
		return false
	}
	if a.OK() {
		return *a.Score == *b.Score || math.Abs(*a.Score-*b.Score) <= 1e-9*math.Abs(*a.Score)
	}
	return a.Error == b.Error
}

func describe(r *Row) string {
	if r.OK() {
		return fmt.Sprintf("score %v (%s)", *r.Score, r.Backend)
	}
	return fmt.Sprintf("error %q", r.Error)
}

// writeRowsAtomic writes a whole output file through a temporary file and
// a rename.
func writeRowsAtomic(path string, format Format, rows []Row) error {
	if format == Parquet {
		return writeParquetAtomic(path, rows)
	}
	var buf []byte
	var err error
	if format == CSV {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		_ = w.Write(csvHeader)
		w.Flush()
		buf = b.Bytes()
	}
	for i := range rows {
		if format == CSV {
			buf, err = appendCSV(buf, &rows[i])
		} else {
			buf, err = appendJSONL(buf, &rows[i])
		}
		if err != nil {
			return err
		}
	}
	return writeFileAtomic(path, buf, true)
}
