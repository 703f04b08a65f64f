package batch

// A minimal Thrift compact-protocol encoder and decoder, enough for the
// Parquet footer and page headers (written from the Thrift compact protocol
// specification: zigzag varints, field headers carrying the id delta in the
// high nibble and the type in the low one, list headers carrying a short
// size in the high nibble).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Compact protocol type codes.
const (
	tStop   = 0
	tTrue   = 1
	tFalse  = 2
	tByte   = 3
	tI16    = 4
	tI32    = 5
	tI64    = 6
	tDouble = 7
	tBinary = 8
	tList   = 9
	tSet    = 10
	tMap    = 11
	tStruct = 12
)

// tWriter appends compact-protocol values to buf. Structs nest: call
// beginStruct/endStruct around the fields of a nested struct.
type tWriter struct {
	buf   []byte
	last  int16   // last field id in the current struct
	stack []int16 // saved last ids of enclosing structs
}

func (w *tWriter) uvarint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *tWriter) zigzag(v int64)   { w.uvarint(uint64(v<<1) ^ uint64(v>>63)) }

func (w *tWriter) field(id int16, typ byte) {
	if d := id - w.last; d > 0 && d <= 15 {
		w.buf = append(w.buf, byte(d)<<4|typ)
	} else {
		w.buf = append(w.buf, typ)
		w.zigzag(int64(id))
	}
	w.last = id
}

func (w *tWriter) i32(id int16, v int32) { w.field(id, tI32); w.zigzag(int64(v)) }
func (w *tWriter) i64(id int16, v int64) { w.field(id, tI64); w.zigzag(v) }
func (w *tWriter) str(id int16, s string) {
	w.field(id, tBinary)
	w.uvarint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

// beginStruct starts a struct-typed field (id > 0) or a struct inside a
// list (id == 0).
func (w *tWriter) beginStruct(id int16) {
	if id > 0 {
		w.field(id, tStruct)
	}
	w.stack = append(w.stack, w.last)
	w.last = 0
}

func (w *tWriter) endStruct() {
	w.buf = append(w.buf, tStop)
	w.last = w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
}

func (w *tWriter) listHeader(id int16, elem byte, n int) {
	w.field(id, tList)
	if n < 15 {
		w.buf = append(w.buf, byte(n)<<4|elem)
	} else {
		w.buf = append(w.buf, 0xf0|elem)
		w.uvarint(uint64(n))
	}
}

func (w *tWriter) i32List(id int16, vs []int32) {
	w.listHeader(id, tI32, len(vs))
	for _, v := range vs {
		w.zigzag(int64(v))
	}
}

func (w *tWriter) strList(id int16, vs []string) {
	w.listHeader(id, tBinary, len(vs))
	for _, s := range vs {
		w.uvarint(uint64(len(s)))
		w.buf = append(w.buf, s...)
	}
}

// tReader decodes compact-protocol data into a generic tree: a struct is a
// map from field id to value; values are int64, float64, bool, []byte,
// []any (lists and sets) or tStructV. Maps are skipped.
type tReader struct {
	b     []byte
	pos   int
	depth int
}

type tStructV map[int16]any

var errThrift = errors.New("parquet: bad thrift data")

func (r *tReader) byte1() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errThrift
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *tReader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		return 0, errThrift
	}
	r.pos += n
	return v, nil
}

func (r *tReader) zigzag() (int64, error) {
	u, err := r.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

func (r *tReader) value(typ byte) (any, error) {
	switch typ {
	case tTrue:
		return true, nil
	case tFalse:
		return false, nil
	case tByte:
		c, err := r.byte1()
		return int64(int8(c)), err
	case tI16, tI32, tI64:
		return r.zigzag()
	case tDouble:
		if r.pos+8 > len(r.b) {
			return nil, errThrift
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.pos:]))
		r.pos += 8
		return v, nil
	case tBinary:
		n, err := r.uvarint()
		if err != nil || n > uint64(len(r.b)-r.pos) {
			return nil, errThrift
		}
		v := r.b[r.pos : r.pos+int(n)]
		r.pos += int(n)
		return v, nil
	case tList, tSet:
		h, err := r.byte1()
		if err != nil {
			return nil, err
		}
		n := uint64(h >> 4)
		if n == 15 {
			if n, err = r.uvarint(); err != nil {
				return nil, err
			}
		}
		if n > uint64(len(r.b)-r.pos) { // every element takes at least a byte
			return nil, errThrift
		}
		out := make([]any, 0, n)
		for i := uint64(0); i < n; i++ {
			et := h & 0x0f
			var v any
			if et == tTrue || et == tFalse { // bools in lists are one byte each
				c, err := r.byte1()
				if err != nil {
					return nil, err
				}
				v = c == 1
			} else if v, err = r.value(et); err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case tMap:
		n, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, nil
		}
		kv, err := r.byte1()
		if err != nil {
			return nil, err
		}
		for i := uint64(0); i < n; i++ {
			if _, err := r.value(kv >> 4); err != nil {
				return nil, err
			}
			if _, err := r.value(kv & 0x0f); err != nil {
				return nil, err
			}
		}
		return nil, nil
	case tStruct:
		return r.structure()
	}
	return nil, fmt.Errorf("%w: type %d", errThrift, typ)
}

func (r *tReader) structure() (tStructV, error) {
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > 32 {
		return nil, errThrift
	}
	s := tStructV{}
	var last int16
	for {
		h, err := r.byte1()
		if err != nil {
			return nil, err
		}
		if h == tStop {
			return s, nil
		}
		typ := h & 0x0f
		id := last + int16(h>>4)
		if h>>4 == 0 {
			v, err := r.zigzag()
			if err != nil {
				return nil, err
			}
			id = int16(v)
		}
		last = id
		v, err := r.value(typ)
		if err != nil {
			return nil, err
		}
		s[id] = v
	}
}

func (s tStructV) int(id int16) int64 {
	v, _ := s[id].(int64)
	return v
}

func (s tStructV) has(id int16) bool { _, ok := s[id]; return ok }

func (s tStructV) bytes(id int16) []byte {
	v, _ := s[id].([]byte)
	return v
}

func (s tStructV) sub(id int16) tStructV {
	v, _ := s[id].(tStructV)
	return v
}

func (s tStructV) list(id int16) []any {
	v, _ := s[id].([]any)
	return v
}
