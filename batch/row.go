package batch

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// Row is one output record: the result of one metric on one pair.
type Row struct {
	ID     string `json:"id"`
	Ref    string `json:"ref"`
	Dist   string `json:"dist"`
	Metric string `json:"metric"`
	// Score is nil when the row is an error row.
	Score *float64 `json:"score"`
	// Extras are the metric's further numbers (Butteraugli's "pnorm3", ...).
	Extras  map[string]float64 `json:"extras,omitempty"`
	Backend string             `json:"backend"`
	// MS is the wall time of the scoring (prepare + score) in milliseconds.
	MS float64 `json:"ms"`
	// Error is empty for a successful row.
	Error string `json:"error,omitempty"`
}

// Key identifies a row: one pair id and one metric.
type Key struct {
	ID     string
	Metric string
}

// Key returns the row's key.
func (r *Row) Key() Key { return Key{r.ID, r.Metric} }

// OK reports whether the row holds a score.
func (r *Row) OK() bool { return r.Error == "" && r.Score != nil }

// Validate checks the invariants every written row keeps.
func (r *Row) Validate() error {
	switch {
	case r.ID == "":
		return errors.New("row without id")
	case r.Metric == "":
		return errors.New("row without metric")
	case r.Error == "" && r.Score == nil:
		return fmt.Errorf("row %s/%s has neither score nor error", r.ID, r.Metric)
	case r.Score != nil && (math.IsNaN(*r.Score) || math.IsInf(*r.Score, 0)):
		return fmt.Errorf("row %s/%s has a non-finite score", r.ID, r.Metric)
	}
	return nil
}

// Format is an output (or manifest) file format.
type Format string

// Output formats.
const (
	JSONL   Format = "jsonl"
	CSV     Format = "csv"
	Parquet Format = "parquet"
	TSV     Format = "tsv" // manifests only
)

// ParseFormat accepts jsonl (also json, ndjson), csv, parquet (also pq) and tsv.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimPrefix(strings.TrimSpace(s), ".")) {
	case "jsonl", "json", "ndjson":
		return JSONL, nil
	case "csv":
		return CSV, nil
	case "parquet", "pq", "parq":
		return Parquet, nil
	case "tsv", "tab", "txt":
		return TSV, nil
	}
	return "", fmt.Errorf("unknown format %q (want jsonl, csv or parquet)", s)
}

// FormatFromPath guesses a format from a file name's extension; ok is false
// when the extension says nothing.
func FormatFromPath(path string) (Format, bool) {
	f, err := ParseFormat(filepath.Ext(path))
	if err != nil || filepath.Ext(path) == "" {
		return "", false
	}
	return f, true
}

// csvHeader is the column order of CSV and Parquet output.
var csvHeader = []string{"id", "ref", "dist", "metric", "score", "extras", "backend", "ms", "error"}

// appendJSONL appends r as one JSON line.
func appendJSONL(dst []byte, r *Row) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return dst, err
	}
	dst = append(dst, b...)
	return append(dst, '\n'), nil
}

// parseJSONL parses one line written by appendJSONL (without its newline).
func parseJSONL(line []byte) (Row, error) {
	var r Row
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&r); err != nil {
		return Row{}, err
	}
	if dec.More() {
		return Row{}, errors.New("trailing data after the JSON object")
	}
	return r, r.Validate()
}

// extrasString is the JSON text of the extras ("" when there are none).
func extrasString(m map[string]float64) string {
	if len(m) == 0 {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(b)
}

func parseExtras(s string) (map[string]float64, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]float64
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("extras: %w", err)
	}
	return m, nil
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// csvFields returns the row's CSV fields in csvHeader order.
func csvFields(r *Row) []string {
	score := ""
	if r.Score != nil {
		score = formatFloat(*r.Score)
	}
	return []string{r.ID, r.Ref, r.Dist, r.Metric, score, extrasString(r.Extras), r.Backend, formatFloat(r.MS), r.Error}
}

// appendCSV appends r as one CSV record (quoted as encoding/csv does).
func appendCSV(dst []byte, r *Row) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(csvFields(r)); err != nil {
		return dst, err
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return dst, err
	}
	return append(dst, buf.Bytes()...), nil
}

// rowFromCSV builds a row from a CSV record in the order of header.
func rowFromCSV(col map[string]int, rec []string) (Row, error) {
	get := func(name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return rec[i]
		}
		return ""
	}
	r := Row{ID: get("id"), Ref: get("ref"), Dist: get("dist"), Metric: get("metric"),
		Backend: get("backend"), Error: get("error")}
	if s := get("score"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Row{}, fmt.Errorf("score: %w", err)
		}
		r.Score = &v
	}
	if s := get("ms"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Row{}, fmt.Errorf("ms: %w", err)
		}
		r.MS = v
	}
	var err error
	if r.Extras, err = parseExtras(get("extras")); err != nil {
		return Row{}, err
	}
	return r, r.Validate()
}

func headerIndex(h []string) map[string]int {
	m := make(map[string]int, len(h))
	for i, name := range h {
		m[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(name, "\ufeff")))] = i
	}
	return m
}
