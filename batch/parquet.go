package batch

// Parquet output through github.com/parquet-go/parquet-go, a maintained
// writer and reader of the whole format. What it gives the batch, over
// the hand-made PLAIN/uncompressed writer it replaced:
//
//   - zstd compression of every column: score tables are mostly repeated
//     paths, metric and backend names, so files shrink several times;
//   - column statistics (min, max, null count) in each column chunk's
//     metadata, and page indexes, so DuckDB, Arrow and Spark can skip row
//     groups when filtering (`WHERE score < 50`, `WHERE error IS NOT NULL`);
//   - a reader of any conforming file, not only of our own writer's subset.
//
// The crash-safety contract does not live here: the batch appends rows to a
// JSONL journal and writes Parquet only at the end of a run, to a
// temporary file that is fsynced and renamed over OUT (sink.go,
// writeParquetAtomic). This file only turns rows into Parquet bytes and
// back.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/zenmetrics-go/zenmetrics"
)

const parquetMagic = "PAR1"

// pqRow is a Row as a Parquet record, csvHeader's columns in csvHeader's
// order. Strings are BYTE_ARRAY with the STRING logical type (VARCHAR in
// DuckDB, string in Arrow); pointers are OPTIONAL columns, nil being null.
// extras is the JSON object text, as in CSV.
type pqRow struct {
	ID      string   `parquet:"id"`
	Ref     string   `parquet:"ref"`
	Dist    string   `parquet:"dist"`
	Metric  string   `parquet:"metric"`
	Score   *float64 `parquet:"score,optional"`
	Extras  *string  `parquet:"extras,optional"`
	Backend string   `parquet:"backend"`
	MS      float64  `parquet:"ms"`
	Error   *string  `parquet:"error,optional"`
}

func toPQ(r *Row) pqRow {
	p := pqRow{ID: r.ID, Ref: r.Ref, Dist: r.Dist, Metric: r.Metric, Backend: r.Backend, MS: r.MS}
	if r.Score != nil {
		v := *r.Score
		p.Score = &v
	}
	if s := extrasString(r.Extras); s != "" {
		p.Extras = &s
	}
	if r.Error != "" {
		e := r.Error
		p.Error = &e
	}
	return p
}

func fromPQ(p *pqRow) (Row, error) {
	r := Row{ID: p.ID, Ref: p.Ref, Dist: p.Dist, Metric: p.Metric, Backend: p.Backend, MS: p.MS}
	if p.Score != nil {
		v := *p.Score
		r.Score = &v
	}
	if p.Extras != nil {
		var err error
		if r.Extras, err = parseExtras(*p.Extras); err != nil {
			return Row{}, err
		}
	}
	if p.Error != nil {
		r.Error = *p.Error
	}
	return r, r.Validate()
}

// pqBatch is how many rows are converted and handed to the library at a
// time: large enough to amortise its per-call work, small enough that the
// staging slice (about 150 bytes a row plus the strings) stays under a
// megabyte.
const pqBatch = 4096

// ParquetWriter streams rows into a Parquet file, one row group per
// GroupRows rows. Close writes the footer; the file is not a valid Parquet
// file before that, which is why the batch writes to a temporary name and
// renames.
type ParquetWriter struct {
	w     *parquet.GenericWriter[pqRow]
	buf   []pqRow
	group int64 // rows written to the library since the last row group
	total int64
	err   error
	// GroupRows is the number of rows per row group (default 65536). Set
	// it before the first Write. A row group is the unit a reader skips
	// with the statistics and the unit it holds in memory: 64 Ki rows of
	// this schema are a few MiB uncompressed.
	GroupRows int
}

// NewParquetWriter returns a writer of zstd-compressed Parquet with column
// statistics on w. It writes nothing until the first row group is full or
// Close is called.
func NewParquetWriter(w io.Writer) (*ParquetWriter, error) {
	pw := parquet.NewGenericWriter[pqRow](w,
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedDefault}),
		// Version 1 data pages: every reader in use reads them (older
		// Spark and Hive releases mishandle some version-2 pages), and
		// the statistics are the same.
		parquet.DataPageVersion(1),
		parquet.DataPageStatistics(true),
		parquet.CreatedBy("zenmetrics-go batch", "1.1.0", ""),
	)
	return &ParquetWriter{w: pw, GroupRows: 1 << 16}, nil
}

// Write adds one row.
func (p *ParquetWriter) Write(r Row) error {
	if p.err != nil {
		return p.err
	}
	p.buf = append(p.buf, toPQ(&r))
	if len(p.buf) >= pqBatch || p.group+int64(len(p.buf)) >= int64(p.groupRows()) {
		return p.flush()
	}
	return nil
}

func (p *ParquetWriter) groupRows() int {
	if p.GroupRows <= 0 {
		return 1 << 16
	}
	return p.GroupRows
}

// flush hands the staged rows to the library and ends the row group when
// it is full. The library buffers a whole row group in memory before it
// writes it, which GroupRows bounds.
func (p *ParquetWriter) flush() (err error) {
	defer func() {
		if err != nil && p.err == nil {
			p.err = err
		}
	}()
	defer zenmetrics.Recover(&err) // the library may panic on a writer error
	for len(p.buf) > 0 {
		n := min(len(p.buf), p.groupRows()-int(p.group))
		if _, err := p.w.Write(p.buf[:n]); err != nil {
			return err
		}
		p.group += int64(n)
		p.total += int64(n)
		p.buf = p.buf[n:]
		if p.group >= int64(p.groupRows()) {
			if err := p.w.Flush(); err != nil {
				return err
			}
			p.group = 0
		}
	}
	p.buf = p.buf[:0:cap(p.buf)]
	return nil
}

// Rows is the number of rows written so far.
func (p *ParquetWriter) Rows() int64 { return p.total + int64(len(p.buf)) }

// Close flushes the last row group and writes the footer. It does not close
// the underlying writer.
func (p *ParquetWriter) Close() (err error) {
	if err := p.flush(); err != nil {
		return err
	}
	defer zenmetrics.Recover(&err)
	return p.w.Close()
}

// ErrNotParquet says a file lacks the Parquet magic or footer, or is not a
// table of score rows.
var ErrNotParquet = errors.New("not a Parquet file")

// ReadParquetFile calls fn for every row of a Parquet file of score rows
// (written by ParquetWriter, by the hand-made writer before it, or by any
// tool that keeps the same column names and types), in order.
func ReadParquetFile(path string, fn func(Row) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := readParquet(f, st.Size(), fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// pqWant are the columns a score file must have: name, physical type and
// whether the column may be null.
var pqWant = func() map[string]parquet.Node {
	fields := parquet.SchemaOf(pqRow{}).Fields()
	m := make(map[string]parquet.Node, len(fields))
	for _, f := range fields {
		m[f.Name()] = f
	}
	return m
}()

// checkSchema refuses a file whose columns are not the score table's, so
// that a wrong file is an error rather than rows of zero values.
func checkSchema(s *parquet.Schema) error {
	got := map[string]parquet.Field{}
	for _, f := range s.Fields() {
		got[f.Name()] = f
	}
	for _, name := range csvHeader {
		want := pqWant[name]
		g, ok := got[name]
		switch {
		case !ok:
			return fmt.Errorf("%w: no column %q", ErrNotParquet, name)
		case !g.Leaf() || g.Repeated():
			return fmt.Errorf("%w: column %q is nested or repeated", ErrNotParquet, name)
		case g.Type().Kind() != want.Type().Kind():
			return fmt.Errorf("%w: column %q is %v, want %v", ErrNotParquet, name, g.Type().Kind(), want.Type().Kind())
		case g.Optional() && !want.Optional():
			return fmt.Errorf("%w: column %q may be null", ErrNotParquet, name)
		}
	}
	return nil
}

// readParquet reads the rows of the Parquet file in r (size bytes). A
// corrupt file gives an error, never a panic: the library's panics are
// recovered into errors.
func readParquet(r io.ReaderAt, size int64, fn func(Row) error) (err error) {
	var magic [4]byte
	if size < 12 {
		return ErrNotParquet
	}
	if _, err := r.ReadAt(magic[:], 0); err != nil || string(magic[:]) != parquetMagic {
		return ErrNotParquet
	}
	if _, err := r.ReadAt(magic[:], size-4); err != nil || string(magic[:]) != parquetMagic {
		return fmt.Errorf("%w: no footer (truncated?)", ErrNotParquet)
	}
	// fnErr keeps fn's own error (and a panic inside fn) apart from the
	// library's, so that only the latter is blamed on the file.
	var fnErr error
	defer func() {
		if fnErr != nil {
			err = fnErr
		}
	}()
	defer zenmetrics.Recover(&err)
	f, err := parquet.OpenFile(r, size)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotParquet, err)
	}
	if err := checkSchema(f.Schema()); err != nil {
		return err
	}
	rd := parquet.NewGenericReader[pqRow](f)
	defer rd.Close()
	want := f.NumRows()
	buf := make([]pqRow, min(max(want, 1), pqBatch))
	var read int64
	for {
		n, rerr := rd.Read(buf)
		for i := range buf[:n] {
			row, err := fromPQ(&buf[i])
			if err != nil {
				return fmt.Errorf("row %d: %w", read, err)
			}
			read++
			if fnErr = fn(row); fnErr != nil {
				return nil
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
		if n == 0 {
			return errors.New("reader made no progress")
		}
	}
	if read != want {
		return fmt.Errorf("read %d rows, the footer says %d", read, want)
	}
	return nil
}

// isParquetFile reports whether the file starts with the Parquet magic.
func isParquetFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && bytes.Equal(b[:], []byte(parquetMagic))
}
