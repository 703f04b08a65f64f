package batch

// A small Parquet writer and reader for the batch's own row schema,
// written from the Apache Parquet format specification:
//
//	"PAR1" | row group 0 column chunks | row group 1 ... | FileMetaData | len32 | "PAR1"
//
// Each column chunk is one v1 data page, PLAIN encoded, UNCOMPRESSED.
// Optional columns carry definition levels (bit width 1) in the RLE /
// bit-packed hybrid encoding, as RLE runs, preceded by their 4-byte length;
// required columns carry none. The footer is FileMetaData in the Thrift
// compact protocol. No statistics, dictionaries or indexes are written. The
// reader accepts what this writer produces (and any file restricted to the
// same features: flat schema, PLAIN v1 pages, no compression).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

const parquetMagic = "PAR1"

// Parquet physical types, repetitions, encodings, page types, used here.
const (
	pqDouble    = 5
	pqByteArray = 6

	pqRequired = 0
	pqOptional = 1

	pqPlain = 0
	pqRLE   = 3

	pqDataPage = 0

	pqConvertedUTF8 = 0
)

type pqColumn struct {
	name     string
	typ      int32 // pqDouble or pqByteArray
	optional bool
}

// parquetSchema is the column layout of Parquet output, csvHeader's order.
var parquetSchema = []pqColumn{
	{"id", pqByteArray, false},
	{"ref", pqByteArray, false},
	{"dist", pqByteArray, false},
	{"metric", pqByteArray, false},
	{"score", pqDouble, true},
	{"extras", pqByteArray, true}, // JSON object text
	{"backend", pqByteArray, false},
	{"ms", pqDouble, false},
	{"error", pqByteArray, true},
}

// pqValue returns column c of r: a string, a float64, or nil (null).
func pqValue(r *Row, c int) any {
	switch c {
	case 0:
		return r.ID
	case 1:
		return r.Ref
	case 2:
		return r.Dist
	case 3:
		return r.Metric
	case 4:
		if r.Score == nil {
			return nil
		}
		return *r.Score
	case 5:
		if s := extrasString(r.Extras); s != "" {
			return s
		}
		return nil
	case 6:
		return r.Backend
	case 7:
		return r.MS
	case 8:
		if r.Error == "" {
			return nil
		}
		return r.Error
	}
	return nil
}

type pqChunkMeta struct {
	col            int
	numValues      int64
	size           int64 // header + page
	dataPageOffset int64
}

type pqGroupMeta struct {
	rows   int64
	size   int64
	chunks []pqChunkMeta
}

// ParquetWriter streams rows into a Parquet file, one row group per
// GroupRows rows. Close writes the footer; the file is not a valid Parquet
// file before that, which is why the batch writes to a temporary name and
// renames.
type ParquetWriter struct {
	w         io.Writer
	off       int64
	buf       []Row
	groups    []pqGroupMeta
	total     int64
	GroupRows int
	err       error
}

// NewParquetWriter writes the leading magic and returns a writer.
func NewParquetWriter(w io.Writer) (*ParquetWriter, error) {
	p := &ParquetWriter{w: w, GroupRows: 1 << 16}
	if err := p.write([]byte(parquetMagic)); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *ParquetWriter) write(b []byte) error {
	if p.err != nil {
		return p.err
	}
	n, err := p.w.Write(b)
	p.off += int64(n)
	p.err = err
	return err
}

// Write adds one row.
func (p *ParquetWriter) Write(r Row) error {
	if p.err != nil {
		return p.err
	}
	p.buf = append(p.buf, r)
	if len(p.buf) >= p.GroupRows {
		return p.flushGroup()
	}
	return nil
}

func (p *ParquetWriter) flushGroup() error {
	if len(p.buf) == 0 {
		return p.err
	}
	g := pqGroupMeta{rows: int64(len(p.buf))}
	var page []byte
	for c, col := range parquetSchema {
		page = page[:0]
		if col.optional {
			page = appendDefLevels(page, p.buf, c)
		}
		for i := range p.buf {
			switch v := pqValue(&p.buf[i], c).(type) {
			case string:
				page = binary.LittleEndian.AppendUint32(page, uint32(len(v)))
				page = append(page, v...)
			case float64:
				page = binary.LittleEndian.AppendUint64(page, math.Float64bits(v))
			}
		}
		var h tWriter
		h.i32(1, pqDataPage)
		h.i32(2, int32(len(page)))
		h.i32(3, int32(len(page)))
		h.beginStruct(5)
		h.i32(1, int32(len(p.buf)))
		h.i32(2, pqPlain)
		h.i32(3, pqRLE)
		h.i32(4, pqRLE)
		h.endStruct()
		h.buf = append(h.buf, tStop)
		cm := pqChunkMeta{col: c, numValues: int64(len(p.buf)), dataPageOffset: p.off,
			size: int64(len(h.buf) + len(page))}
		if err := p.write(h.buf); err != nil {
			return err
		}
		if err := p.write(page); err != nil {
			return err
		}
		g.size += cm.size
		g.chunks = append(g.chunks, cm)
	}
	p.groups = append(p.groups, g)
	p.total += g.rows
	p.buf = p.buf[:0]
	return p.err
}

// appendDefLevels writes the definition levels of column c (1 present, 0
// null) as RLE runs, prefixed by their byte length.
func appendDefLevels(dst []byte, rows []Row, c int) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for i := 0; i < len(rows); {
		present := pqValue(&rows[i], c) != nil
		j := i + 1
		for j < len(rows) && (pqValue(&rows[j], c) != nil) == present {
			j++
		}
		dst = binary.AppendUvarint(dst, uint64(j-i)<<1)
		if present {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
		i = j
	}
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// Rows is the number of rows written so far.
func (p *ParquetWriter) Rows() int64 { return p.total + int64(len(p.buf)) }

// Close flushes the last row group and writes the footer. It does not close
// the underlying writer.
func (p *ParquetWriter) Close() error {
	if err := p.flushGroup(); err != nil {
		return err
	}
	var t tWriter
	t.i32(1, 1) // version
	t.listHeader(2, tStruct, len(parquetSchema)+1)
	t.beginStruct(0) // root
	t.str(4, "schema")
	t.i32(5, int32(len(parquetSchema)))
	t.endStruct()
	for _, col := range parquetSchema {
		t.beginStruct(0)
		t.i32(1, col.typ)
		rep := int32(pqRequired)
		if col.optional {
			rep = pqOptional
		}
		t.i32(3, rep)
		t.str(4, col.name)
		if col.typ == pqByteArray {
			t.i32(6, pqConvertedUTF8)
			t.beginStruct(10) // LogicalType
			t.beginStruct(1)  // STRING
			t.endStruct()
			t.endStruct()
		}
		t.endStruct()
	}
	t.i64(3, p.total)
	t.listHeader(4, tStruct, len(p.groups))
	for _, g := range p.groups {
		t.beginStruct(0)
		t.listHeader(1, tStruct, len(g.chunks))
		for _, cm := range g.chunks {
			col := parquetSchema[cm.col]
			t.beginStruct(0)
			t.i64(2, cm.dataPageOffset) // file_offset
			t.beginStruct(3)            // ColumnMetaData
			t.i32(1, col.typ)
			if col.optional {
				t.i32List(2, []int32{pqPlain, pqRLE})
			} else {
				t.i32List(2, []int32{pqPlain})
			}
			t.strList(3, []string{col.name})
			t.i32(4, 0) // UNCOMPRESSED
			t.i64(5, cm.numValues)
			t.i64(6, cm.size)
			t.i64(7, cm.size)
			t.i64(9, cm.dataPageOffset)
			t.endStruct()
			t.endStruct()
		}
		t.i64(2, g.size)
		t.i64(3, g.rows)
		t.endStruct()
	}
	t.str(6, "zenmetrics-go batch version 1.0.0")
	t.buf = append(t.buf, tStop)
	if err := p.write(t.buf); err != nil {
		return err
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:], uint32(len(t.buf)))
	copy(tail[4:], parquetMagic)
	return p.write(tail[:])
}

// ErrNotParquet says a file lacks the Parquet magic or footer.
var ErrNotParquet = errors.New("not a Parquet file")

// ReadParquetFile calls fn for every row of a Parquet file written by
// ParquetWriter (or restricted to the same features), in order.
func ReadParquetFile(path string, fn func(Row) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := readParquet(data, fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func readParquet(data []byte, fn func(Row) error) error {
	if len(data) < 12 || string(data[:4]) != parquetMagic || string(data[len(data)-4:]) != parquetMagic {
		return ErrNotParquet
	}
	flen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	if flen <= 0 || flen > len(data)-12 {
		return fmt.Errorf("%w: footer length %d", ErrNotParquet, flen)
	}
	tr := &tReader{b: data[len(data)-8-flen : len(data)-8]}
	meta, err := tr.structure()
	if err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	schema := meta.list(2)
	if len(schema) < 2 {
		return errors.New("empty schema")
	}
	type leaf struct {
		name     string
		typ      int64
		optional bool
	}
	var leaves []leaf
	for _, e := range schema[1:] {
		s, _ := e.(tStructV)
		if s == nil || s.int(5) > 0 || s.int(3) == 2 {
			return errors.New("nested or repeated schema not supported")
		}
		leaves = append(leaves, leaf{string(s.bytes(4)), s.int(1), s.int(3) == pqOptional})
	}
	for gi, g := range meta.list(4) {
		gs, _ := g.(tStructV)
		nrows := int(gs.int(3))
		if nrows < 0 || nrows > len(data) {
			return fmt.Errorf("row group %d: bad row count %d", gi, nrows)
		}
		cols := gs.list(1)
		if len(cols) != len(leaves) {
			return fmt.Errorf("row group %d: %d column chunks for %d columns", gi, len(cols), len(leaves))
		}
		values := make([][]any, len(leaves))
		for ci, cc := range cols {
			cs, _ := cc.(tStructV)
			md := cs.sub(3)
			if md == nil {
				return fmt.Errorf("row group %d column %d: no metadata", gi, ci)
			}
			if md.int(4) != 0 {
				return fmt.Errorf("column %s: compressed (codec %d) not supported", leaves[ci].name, md.int(4))
			}
			vals, err := readChunk(data, md, leaves[ci].typ, leaves[ci].optional)
			if err != nil {
				return fmt.Errorf("row group %d column %s: %w", gi, leaves[ci].name, err)
			}
			if len(vals) != nrows {
				return fmt.Errorf("row group %d column %s: %d values for %d rows", gi, leaves[ci].name, len(vals), nrows)
			}
			values[ci] = vals
		}
		for i := 0; i < nrows; i++ {
			var r Row
			for ci, l := range leaves {
				v := values[ci][i]
				s, _ := v.(string)
				f, isF := v.(float64)
				switch l.name {
				case "id":
					r.ID = s
				case "ref":
					r.Ref = s
				case "dist":
					r.Dist = s
				case "metric":
					r.Metric = s
				case "score":
					if isF {
						r.Score = &f
					}
				case "extras":
					if r.Extras, err = parseExtras(s); err != nil {
						return err
					}
				case "backend":
					r.Backend = s
				case "ms":
					r.MS = f
				case "error":
					r.Error = s
				}
			}
			if err := r.Validate(); err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// readChunk decodes the data pages of one column chunk.
func readChunk(data []byte, md tStructV, typ int64, optional bool) ([]any, error) {
	want := md.int(5)
	off := md.int(9)
	end := off + md.int(7)
	if off < 4 || end > int64(len(data)) || off > end {
		return nil, errors.New("chunk out of the file")
	}
	var out []any
	for int64(len(out)) < want {
		if off >= end {
			return nil, errors.New("chunk ends early")
		}
		tr := &tReader{b: data[off:end]}
		ph, err := tr.structure()
		if err != nil {
			return nil, fmt.Errorf("page header: %w", err)
		}
		size := ph.int(3)
		body := int64(tr.pos) + off
		if size < 0 || body+size > end {
			return nil, errors.New("page out of the chunk")
		}
		page := data[body : body+size]
		off = body + size
		if ph.int(1) != pqDataPage {
			return nil, fmt.Errorf("page type %d not supported", ph.int(1))
		}
		dh := ph.sub(5)
		if dh == nil || dh.int(2) != pqPlain {
			return nil, errors.New("only PLAIN v1 data pages are supported")
		}
		n := int(dh.int(1))
		if n < 0 || n > len(data) {
			return nil, errors.New("bad value count")
		}
		def := make([]bool, n)
		if optional {
			if len(page) < 4 {
				return nil, errors.New("short definition levels")
			}
			l := int(binary.LittleEndian.Uint32(page))
			if l > len(page)-4 {
				return nil, errors.New("short definition levels")
			}
			if err := decodeLevels(page[4:4+l], def); err != nil {
				return nil, err
			}
			page = page[4+l:]
		} else {
			for i := range def {
				def[i] = true
			}
		}
		for _, present := range def {
			if !present {
				out = append(out, nil)
				continue
			}
			switch typ {
			case pqDouble:
				if len(page) < 8 {
					return nil, io.ErrUnexpectedEOF
				}
				out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(page)))
				page = page[8:]
			case pqByteArray:
				if len(page) < 4 {
					return nil, io.ErrUnexpectedEOF
				}
				l := int(binary.LittleEndian.Uint32(page))
				if l > len(page)-4 {
					return nil, io.ErrUnexpectedEOF
				}
				out = append(out, string(page[4:4+l]))
				page = page[4+l:]
			default:
				return nil, fmt.Errorf("physical type %d not supported", typ)
			}
		}
	}
	return out, nil
}

// decodeLevels decodes bit-width-1 levels in the RLE / bit-packed hybrid
// encoding into dst.
func decodeLevels(b []byte, dst []bool) error {
	i := 0
	for i < len(dst) {
		h, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad level run header")
		}
		b = b[n:]
		if h&1 == 0 { // RLE run
			count := int(h >> 1)
			if len(b) < 1 || count > len(dst)-i {
				return errors.New("bad RLE run")
			}
			v := b[0]&1 == 1
			b = b[1:]
			for k := 0; k < count; k++ {
				dst[i] = v
				i++
			}
			continue
		}
		groups := int(h >> 1) // bit-packed, 8 values (one byte at width 1) a group
		if groups > len(b) {
			return errors.New("bad bit-packed run")
		}
		for k := 0; k < groups*8 && i < len(dst); k++ {
			dst[i] = b[k/8]>>(k%8)&1 == 1
			i++
		}
		b = b[groups:]
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
