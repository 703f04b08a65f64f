package batch

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// sink is where rows go. Commit makes a chunk of rows durable (or, for
// stdout, just writes it); Close finishes the output (Parquet conversion).
type sink interface {
	Commit(rows []Row) error
	Close() error
}

// openMode says what to do with an existing output.
type openMode int

const (
	modeCreate openMode = iota // fail if the output exists
	modeForce                  // start over
	modeResume                 // keep what is there
)

// ErrOutputExists is returned when the output exists and neither Resume
// nor Force was given.
var ErrOutputExists = errors.New("output exists (use --resume to continue it or --force to start over)")

// doneSet records the rows found at resume: key → whether it succeeded.
type doneSet map[Key]bool

// checkpoint is the sidecar OUT.ckpt of an append log: the byte length of
// the part of OUT known to be complete and fsynced.
type checkpoint struct {
	Version int    `json:"version"`
	Format  Format `json:"format"`
	Size    int64  `json:"size"`
	Rows    int64  `json:"rows"`
}

// appendLog is a JSONL or CSV file appended in fsynced chunks with a
// checkpoint after each. Invariant: the checkpoint's size is never more
// than the durable length of the file and always ends at a row boundary,
// because the file is fsynced before the checkpoint is replaced.
type appendLog struct {
	f      *os.File
	path   string
	format Format
	size   int64
	rows   int64
	buf    []byte
	warn   func(string)
}

func ckptPath(path string) string { return path + ".ckpt" }

// openAppendLog opens or creates path. With modeResume it cuts the file back
// to its last complete row (at most the checkpoint's size) and calls onRow
// for every row kept.
func openAppendLog(path string, format Format, mode openMode, onRow func(Row), warn func(string)) (*appendLog, error) {
	if warn == nil {
		warn = func(string) {}
	}
	_, statErr := os.Stat(path)
	exists := statErr == nil
	if exists && mode == modeCreate {
		return nil, fmt.Errorf("%s: %w", path, ErrOutputExists)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	l := &appendLog{f: f, path: path, format: format, warn: warn}
	if mode == modeResume && exists {
		err = l.recover(onRow)
	} else {
		err = l.reset()
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	if !exists {
		syncDir(filepath.Dir(path))
	}
	return l, nil
}

// reset empties the file and writes the CSV header.
func (l *appendLog) reset() error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	l.size, l.rows = 0, 0
	if l.format == CSV {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		_ = w.Write(csvHeader)
		w.Flush()
		if _, err := l.f.WriteAt(b.Bytes(), 0); err != nil {
			return err
		}
		l.size = int64(b.Len())
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	return l.writeCkpt()
}

func readCkpt(path string) (checkpoint, bool) {
	b, err := os.ReadFile(ckptPath(path))
	if err != nil {
		return checkpoint{}, false
	}
	var c checkpoint
	if json.Unmarshal(b, &c) != nil || c.Version != 1 || c.Size < 0 {
		return checkpoint{}, false
	}
	return c, true
}

// recover keeps the longest prefix of complete, valid rows within the
// checkpoint and truncates the rest.
func (l *appendLog) recover(onRow func(Row)) error {
	st, err := l.f.Stat()
	if err != nil {
		return err
	}
	limit := st.Size()
	if c, ok := readCkpt(l.path); ok {
		if c.Format != "" && c.Format != l.format {
			return fmt.Errorf("%s holds %s (per %s), not %s", l.path, c.Format, ckptPath(l.path), l.format)
		}
		if c.Size <= limit {
			limit = c.Size
		} else {
			l.warn(fmt.Sprintf("%s is shorter (%d bytes) than its checkpoint says (%d): checking every row", l.path, limit, c.Size))
		}
	} else if limit > 0 {
		l.warn(fmt.Sprintf("%s has no usable checkpoint: checking every row", l.path))
	}
	data := make([]byte, limit)
	if _, err := io.ReadFull(io.NewSectionReader(l.f, 0, limit), data); err != nil {
		return err
	}
	var good, rows int64
	var bad error
	switch l.format {
	case JSONL:
		good, rows, bad = scanJSONL(data, onRow)
	case CSV:
		good, rows, bad = scanCSV(data, onRow)
		if good == 0 { // no valid header: start the file anew
			return l.reset()
		}
	default:
		return fmt.Errorf("append log cannot be %s", l.format)
	}
	if bad != nil {
		l.warn(fmt.Sprintf("%s: dropping from byte %d on (%v); those rows will be redone", l.path, good, bad))
	}
	if good != st.Size() {
		if err := l.f.Truncate(good); err != nil {
			return err
		}
		if err := l.f.Sync(); err != nil {
			return err
		}
	}
	l.size, l.rows = good, rows
	return l.writeCkpt()
}

// scanJSONL returns the length of the prefix of complete valid lines.
func scanJSONL(data []byte, onRow func(Row)) (good, rows int64, bad error) {
	for int(good) < len(data) {
		rest := data[good:]
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return good, rows, errors.New("incomplete last line")
		}
		line := rest[:nl]
		if len(bytes.TrimSpace(line)) > 0 {
			r, err := parseJSONL(line)
			if err != nil {
				return good, rows, err
			}
			if onRow != nil {
				onRow(r)
			}
			rows++
		}
		good += int64(nl) + 1
	}
	return good, rows, nil
}

// scanCSV is scanJSONL for CSV: a header, then records each ending in a
// newline. good is 0 when the header itself is missing or wrong.
func scanCSV(data []byte, onRow func(Row)) (good, rows int64, bad error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	h, err := r.Read()
	if err != nil || r.InputOffset() == 0 || data[r.InputOffset()-1] != '\n' {
		return 0, 0, errors.New("no header")
	}
	col := headerIndex(h)
	if _, ok := col["id"]; !ok {
		return 0, 0, errors.New("no id column in the header")
	}
	good = r.InputOffset()
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return good, rows, nil
		}
		if err != nil {
			return good, rows, err
		}
		end := r.InputOffset()
		if data[end-1] != '\n' {
			return good, rows, errors.New("incomplete last record")
		}
		row, err := rowFromCSV(col, rec)
		if err != nil {
			return good, rows, err
		}
		if onRow != nil {
			onRow(row)
		}
		rows++
		good = end
	}
}

func (l *appendLog) writeCkpt() error {
	b, _ := json.Marshal(checkpoint{Version: 1, Format: l.format, Size: l.size, Rows: l.rows})
	return writeFileAtomic(ckptPath(l.path), append(b, '\n'), false)
}

// Commit appends rows, fsyncs, then records the new length.
func (l *appendLog) Commit(rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	l.buf = l.buf[:0]
	var err error
	for i := range rows {
		if l.format == CSV {
			l.buf, err = appendCSV(l.buf, &rows[i])
		} else {
			l.buf, err = appendJSONL(l.buf, &rows[i])
		}
		if err != nil {
			return err
		}
	}
	if _, err := l.f.WriteAt(l.buf, l.size); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	l.size += int64(len(l.buf))
	l.rows += int64(len(rows))
	return l.writeCkpt()
}

func (l *appendLog) Close() error { return l.f.Close() }

// rewrite replaces the log's content with rows (used to drop error rows for
// --retry-failed): temp file, fsync, the checkpoint removed, rename, new
// checkpoint. A crash in between leaves either file whole; without a
// checkpoint the next resume checks every row.
func (l *appendLog) rewrite(rows []Row) error {
	tmp := l.path + ".rewrite.tmp"
	nl, err := openAppendLog(tmp, l.format, modeForce, nil, nil)
	if err != nil {
		return err
	}
	if err := nl.Commit(rows); err != nil {
		nl.Close()
		return err
	}
	nl.Close()
	os.Remove(ckptPath(tmp))
	if err := os.Remove(ckptPath(l.path)); err != nil && !os.IsNotExist(err) {
		return err
	}
	l.f.Close()
	if err := os.Rename(tmp, l.path); err != nil {
		return err
	}
	syncDir(filepath.Dir(l.path))
	f, err := os.OpenFile(l.path, os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	l.f, l.size, l.rows = f, nl.size, nl.rows
	return l.writeCkpt()
}

// writeFileAtomic writes data to path through a temporary file and a rename.
func writeFileAtomic(path string, data []byte, dirSync bool) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if dirSync {
		syncDir(filepath.Dir(path))
	}
	return nil
}

// syncDir fsyncs a folder so that a rename or creation in it is durable.
// Not every system allows it (Windows does not); failures are ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// appendSink is the sink for JSONL and CSV output files.
type appendSink struct{ *appendLog }

// parquetSink writes rows to a crash-safe JSONL journal (OUT.journal.jsonl)
// and, on Close, merges the previous OUT (if any) with the journal into a
// new Parquet file that atomically replaces OUT; then removes the journal.
type parquetSink struct {
	out     string
	journal *appendLog
	prev    []Row // rows of the existing OUT kept at resume
}

func journalPath(out string) string { return out + ".journal.jsonl" }

func openParquetSink(out string, mode openMode, onRow func(Row), warn func(string)) (*parquetSink, error) {
	jp := journalPath(out)
	_, errOut := os.Stat(out)
	_, errJ := os.Stat(jp)
	if mode == modeCreate && (errOut == nil || errJ == nil) {
		return nil, fmt.Errorf("%s: %w", out, ErrOutputExists)
	}
	s := &parquetSink{out: out}
	if mode == modeForce {
		if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	if mode == modeResume && errOut == nil {
		err := ReadParquetFile(out, func(r Row) error {
			s.prev = append(s.prev, r)
			if onRow != nil {
				onRow(r)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
	}
	j, err := openAppendLog(jp, JSONL, mode, onRow, warn)
	if err != nil {
		return nil, err
	}
	s.journal = j
	return s, nil
}

func (s *parquetSink) Commit(rows []Row) error { return s.journal.Commit(rows) }

// Close writes OUT from the previous rows and the journal. A later row
// with the same key replaces an earlier one (that is how --retry-failed
// replaces error rows).
func (s *parquetSink) Close() error {
	var rows []Row
	index := map[Key]int{}
	add := func(r Row) {
		if i, ok := index[r.Key()]; ok {
			rows[i] = r
			return
		}
		index[r.Key()] = len(rows)
		rows = append(rows, r)
	}
	for _, r := range s.prev {
		add(r)
	}
	if err := s.journal.f.Sync(); err != nil {
		return err
	}
	data := make([]byte, s.journal.size)
	if _, err := io.ReadFull(io.NewSectionReader(s.journal.f, 0, s.journal.size), data); err != nil {
		return err
	}
	if _, _, err := scanJSONL(data, add); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := writeParquetAtomic(s.out, rows); err != nil {
		return err
	}
	s.journal.Close()
	os.Remove(s.journal.path)
	os.Remove(ckptPath(s.journal.path))
	return nil
}

// writeParquetAtomic writes rows as Parquet to a temporary file, fsyncs
// it, and renames it over path.
func writeParquetAtomic(path string, rows []Row) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = func() error {
		w, err := NewParquetWriter(bw)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := w.Write(r); err != nil {
				return err
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// streamSink writes to a plain writer (stdout): no durability, no resume.
type streamSink struct {
	w      io.Writer
	format Format
	header bool
}

func (s *streamSink) Commit(rows []Row) error {
	var buf []byte
	var err error
	if s.format == CSV && !s.header {
		var b bytes.Buffer
		cw := csv.NewWriter(&b)
		_ = cw.Write(csvHeader)
		cw.Flush()
		buf = append(buf, b.Bytes()...)
		s.header = true
	}
	for i := range rows {
		if s.format == CSV {
			buf, err = appendCSV(buf, &rows[i])
		} else {
			buf, err = appendJSONL(buf, &rows[i])
		}
		if err != nil {
			return err
		}
	}
	_, err = s.w.Write(buf)
	return err
}

func (s *streamSink) Close() error {
	if s.format == CSV && !s.header {
		return s.Commit(nil)
	}
	return nil
}

// readRowsFile reads every row of an output file of any format (detected
// from its content): JSONL, CSV or Parquet. A torn last line is an error.
func readRowsFile(path string, fn func(Row)) error {
	if isParquetFile(path) {
		return ReadParquetFile(path, func(r Row) error { fn(r); return nil })
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var good int64
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		good, _, err = scanJSONL(data, fn)
	} else {
		good, _, err = scanCSV(data, fn)
		if good == 0 && len(data) > 0 && err == nil {
			err = errors.New("no CSV header")
		}
	}
	if err != nil {
		return fmt.Errorf("%s: byte %d: %w", path, good, err)
	}
	return nil
}
