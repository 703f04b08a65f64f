package batch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

func f64(v float64) *float64 { return &v }

func sampleRows(n int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		r := Row{ID: fmt.Sprintf("pair-%04d", i), Ref: "refs/a b,\"c\".png", Dist: fmt.Sprintf("d/%d.png", i),
			Metric: "ssim2", Backend: "cpu", MS: float64(i) * 0.25}
		switch i % 4 {
		case 0:
			r.Score = f64(float64(i) - 12.5)
		case 1:
			r.Score = f64(math.Pi * float64(i))
			r.Extras = map[string]float64{"pnorm3": 1.5, "max": float64(i)}
			r.Metric = "butteraugli"
		case 2:
			r.Error = fmt.Sprintf("d/%d.png: zenmetrics: bad input: truncated\nline two ✓", i)
		case 3:
			r.Score = f64(-0.0)
		}
		rows[i] = r
	}
	return rows
}

func writeParquet(t *testing.T, path string, rows []Row, groupRows int) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewParquetWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.GroupRows = groupRows
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParquetRoundTrip(t *testing.T) {
	for _, tc := range []struct{ n, group int }{{0, 10}, {1, 10}, {37, 10}, {100, 1000}, {40, 20}} {
		path := filepath.Join(t.TempDir(), "x.parquet")
		rows := sampleRows(tc.n)
		writeParquet(t, path, rows, tc.group)
		var got []Row
		if err := ReadParquetFile(path, func(r Row) error { got = append(got, r); return nil }); err != nil {
			t.Fatalf("n=%d: %v", tc.n, err)
		}
		if len(got) != len(rows) {
			t.Fatalf("n=%d: read %d rows", tc.n, len(got))
		}
		for i := range rows {
			if !reflect.DeepEqual(normRow(rows[i]), normRow(got[i])) {
				t.Fatalf("n=%d row %d: wrote %+v, read %+v", tc.n, i, rows[i], got[i])
			}
		}
	}
}

func TestParquetRejectsGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.parquet")
	writeParquet(t, path, sampleRows(20), 8)
	data, _ := os.ReadFile(path)
	for cut := 0; cut < len(data); cut += 7 {
		// A truncated file must give an error, never a panic or wrong rows.
		err := readParquet(data[:cut], func(Row) error { return nil })
		if err == nil {
			t.Fatalf("truncated at %d of %d: no error", cut, len(data))
		}
	}
}

// normRow makes rows comparable: empty extras maps equal nil.
func normRow(r Row) Row {
	if len(r.Extras) == 0 {
		r.Extras = nil
	}
	return r
}

// TestParquetIndependentReaders reads a file written here with DuckDB and
// hyparquet (through Node.js) and compares every value. It runs when
// ZENMETRICS_PQCHECK names a folder where
// `npm install @duckdb/node-api hyparquet` was run, and is skipped otherwise.
func TestParquetIndependentReaders(t *testing.T) {
	dir := os.Getenv("ZENMETRICS_PQCHECK")
	if dir == "" {
		t.Skip("ZENMETRICS_PQCHECK not set (folder with node_modules/@duckdb/node-api and hyparquet)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found")
	}
	path := filepath.Join(t.TempDir(), "x.parquet")
	rows := sampleRows(45)
	writeParquet(t, path, rows, 16) // several row groups
	cmd := exec.Command(node, shared.Testdata(t, "batch", "pqcheck.mjs"), path)
	cmd.Env = append(os.Environ(), "ZENMETRICS_PQCHECK="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pqcheck: %v\n%s", err, stderr.String())
	}
	var res struct {
		DuckDB       []map[string]any `json:"duckdb"`
		DuckDBSchema []string         `json:"duckdb_schema"`
		Hyparquet    []map[string]any `json:"hyparquet"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("duckdb schema: %v", res.DuckDBSchema)
	wantSchema := []string{"id:VARCHAR", "ref:VARCHAR", "dist:VARCHAR", "metric:VARCHAR", "score:DOUBLE",
		"extras:VARCHAR", "backend:VARCHAR", "ms:DOUBLE", "error:VARCHAR"}
	if !reflect.DeepEqual(res.DuckDBSchema, wantSchema) {
		t.Errorf("duckdb schema %v, want %v", res.DuckDBSchema, wantSchema)
	}
	for name, got := range map[string][]map[string]any{"duckdb": res.DuckDB, "hyparquet": res.Hyparquet} {
		if len(got) != len(rows) {
			t.Fatalf("%s read %d rows, want %d", name, len(got), len(rows))
		}
		for i, r := range rows {
			g := got[i]
			str := func(k string) string { s, _ := g[k].(string); return s }
			num := func(k string) (float64, bool) {
				switch v := g[k].(type) {
				case float64:
					return v, true
				case string: // DuckDB's JSON form of a DOUBLE may be a string
					var f float64
					_, err := fmt.Sscan(v, &f)
					return f, err == nil
				}
				return 0, false
			}
			if str("id") != r.ID || str("ref") != r.Ref || str("dist") != r.Dist || str("metric") != r.Metric ||
				str("backend") != r.Backend || str("error") != r.Error || str("extras") != extrasString(r.Extras) {
				t.Errorf("%s row %d: %v, want %+v", name, i, g, r)
			}
			if s, ok := num("score"); ok != (r.Score != nil) || (ok && s != *r.Score) {
				t.Errorf("%s row %d: score %v, want %v", name, i, g["score"], r.Score)
			}
			if ms, ok := num("ms"); !ok || ms != r.MS {
				t.Errorf("%s row %d: ms %v, want %v", name, i, g["ms"], r.MS)
			}
		}
	}
}
