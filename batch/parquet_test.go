package batch

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

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
		err := readParquet(bytes.NewReader(data[:cut]), int64(cut), func(Row) error { return nil })
		if err == nil {
			t.Fatalf("truncated at %d of %d: no error", cut, len(data))
		}
	}
}

// TestParquetCodecAndStatistics reads a written file's footer back with
// the library: every column chunk is zstd-compressed and carries
// statistics whose null counts and min/max are exactly those of the rows
// written (exact: they are counts and copies of written values).
func TestParquetCodecAndStatistics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.parquet")
	rows := sampleRows(45)
	writeParquet(t, path, rows, 16) // row groups of 16, 16 and 13 rows
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	md := pf.Metadata()
	if len(md.RowGroups) != 3 || md.NumRows != 45 {
		t.Fatalf("%d row groups, %d rows; want 3, 45", len(md.RowGroups), md.NumRows)
	}
	col := map[string]int{}
	for i, name := range csvHeader {
		col[name] = i
	}
	for g, rg := range md.RowGroups {
		group := rows[16*g : min(16*(g+1), len(rows))]
		if len(rg.Columns) != len(csvHeader) {
			t.Fatalf("row group %d: %d columns", g, len(rg.Columns))
		}
		for c, cc := range rg.Columns {
			m := cc.MetaData
			name := csvHeader[c]
			if got := strings.Join(m.PathInSchema, "."); got != name {
				t.Fatalf("row group %d column %d is %q, want %q", g, c, got, name)
			}
			if cc.ColumnIndexOffset <= 0 || cc.OffsetIndexOffset <= 0 {
				t.Errorf("row group %d column %s: no page index", g, name)
			}
			if m.Codec != format.Zstd {
				t.Errorf("row group %d column %s: codec %v, want ZSTD", g, name, m.Codec)
			}
			var nulls int64
			for i := range group {
				if v := toPQ(&group[i]); (name == "score" && v.Score == nil) || (name == "extras" && v.Extras == nil) || (name == "error" && v.Error == nil) {
					nulls++
				}
			}
			if m.Statistics.NullCount != nulls {
				t.Errorf("row group %d column %s: null count %d, want %d", g, name, m.Statistics.NullCount, nulls)
			}
			if nulls < int64(len(group)) && (m.Statistics.MinValue == nil || m.Statistics.MaxValue == nil) {
				t.Errorf("row group %d column %s: no min/max statistics", g, name)
			}
		}
		// min/max of a DOUBLE column (PLAIN little-endian) and of a
		// STRING column (the bytes), against the rows.
		lo, hi := math.Inf(1), math.Inf(-1)
		idLo, idHi := group[0].ID, group[0].ID
		for _, r := range group {
			lo, hi = math.Min(lo, r.MS), math.Max(hi, r.MS)
			idLo, idHi = min(idLo, r.ID), max(idHi, r.ID)
		}
		ms := rg.Columns[col["ms"]].MetaData.Statistics
		if got := math.Float64frombits(binary.LittleEndian.Uint64(ms.MinValue)); got != lo {
			t.Errorf("row group %d: ms min %v, want %v", g, got, lo)
		}
		if got := math.Float64frombits(binary.LittleEndian.Uint64(ms.MaxValue)); got != hi {
			t.Errorf("row group %d: ms max %v, want %v", g, got, hi)
		}
		id := rg.Columns[col["id"]].MetaData.Statistics
		if string(id.MinValue) != idLo || string(id.MaxValue) != idHi {
			t.Errorf("row group %d: id min/max %q/%q, want %q/%q", g, id.MinValue, id.MaxValue, idLo, idHi)
		}
	}
	// Strings are STRING (UTF-8) so that DuckDB, Arrow and Spark read
	// them as text, not as binary.
	for _, name := range []string{"id", "ref", "dist", "metric", "extras", "backend", "error"} {
		lt, ok := pf.Schema().Lookup(name)
		if !ok || !lt.Node.Leaf() || lt.Node.Type().LogicalType() == nil || lt.Node.Type().LogicalType().String() != "STRING" {
			t.Errorf("column %s is not a STRING column", name)
		}
	}
}

// TestParquetRejectsOtherTables: a Parquet file that is not a score table
// is an error, not rows of zero values.
func TestParquetRejectsOtherTables(t *testing.T) {
	type other struct {
		ID    string  `parquet:"id"`
		Score float64 `parquet:"score"`
	}
	path := filepath.Join(t.TempDir(), "other.parquet")
	if err := parquet.WriteFile(path, []other{{"a", 1}}); err != nil {
		t.Fatal(err)
	}
	err := ReadParquetFile(path, func(Row) error { return nil })
	if !errors.Is(err, ErrNotParquet) || !strings.Contains(err.Error(), `no column "ref"`) {
		t.Fatalf("got %v, want ErrNotParquet naming the missing column", err)
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
