package imageio

import (
	"encoding/binary"
	"math/bits"
	"sync"
)

// pngInflate decodes a PNG's zlib stream (RFC 1950/1951) from its IDAT
// payloads into out, which must come out exactly full: the caller knows
// the size of the filtered image, so the whole output is one flat buffer.
// That is what makes it faster than a streaming inflater (klauspost's or
// compress/flate): a match copies from anywhere earlier in out instead of
// through a 32 KiB ring window, nothing is copied out of a window
// afterwards, and the bit buffer is refilled eight bytes at a time. The
// Huffman decoding is table-driven: one lookup for codes of up to 10
// (litlen) or 8 (distance) bits, a second one for longer codes.
//
// It accepts exactly the streams Go's compress/zlib (and so image/png)
// accepts for an image of this size: the zlib header rules (method 8,
// window ≤ 32 KiB, header check, a preset dictionary only with the empty
// dictionary's id 1), complete Huffman codes except a single code of
// length 1, no symbol or distance out of range, and the Adler-32 of the
// output at the end. More output than out holds is "too much pixel data"
// and a stream that ends early "not enough pixel data", as in image/png.
// Bytes after the Adler-32 are ignored (see pngdecode.go).
func pngInflate(src chunkSource, out []byte) error {
	f := inflater{src: src, out: out}
	if err := f.header(); err != nil {
		return err
	}
	for {
		final, err := f.block()
		if err != nil {
			return err
		}
		if final {
			break
		}
	}
	if f.pos != len(f.out) {
		return pngBad("not enough pixel data")
	}
	// The Adler-32 starts on the next byte boundary.
	f.drop(f.nbits & 7)
	if f.nbits < 32 {
		f.refill()
	}
	sum := uint32(f.bits)
	f.drop(32)
	if f.over*8 > int(f.nbits) {
		return pngBad("not enough pixel data")
	}
	if bits.ReverseBytes32(sum) != adler32Sum(out) {
		return pngBad("corrupt image data: zlib: invalid checksum")
	}
	return nil
}

// Huffman table entries: bits 0-3 the code length to consume, 4-6 the
// kind, 7 set for literals (one test in the hot loop), 8-12 the extra bits
// of a length or distance (for a link, the index bits of its sub-table;
// for a literal, bit 8 says that the entry holds two), 16-31 the value
// (literal byte, or two of them, length or distance base, or sub-table
// offset).
const (
	kindBad  = iota // no code, or a symbol that is not allowed
	kindLit         // literal byte
	kindLen         // match length (litlen table) or distance (distance table)
	kindEOB         // end of block
	kindLink        // go on in a sub-table
)

func hEntry(kind, extra, value uint32) uint32 { return value<<16 | extra<<8 | kind<<4 }

const (
	litFlag  = 0x80
	pairFlag = 0x100
)

const (
	litRootBits  = 11
	distRootBits = 8
	clRootBits   = 7
	maxCodeLen   = 15
	// A complete code has at most one sub-table per long symbol, each of
	// at most 2^(15 - root bits) entries.
	litTableLen  = 1<<litRootBits + 288<<(maxCodeLen-litRootBits)
	distTableLen = 1<<distRootBits + 32<<(maxCodeLen-distRootBits)
)

// litSyms and distSyms give each symbol's table entry, length aside.
var litSyms, distSyms [32 + 288]uint32

// fixedLit and fixedDist are the fixed-code tables (RFC 1951 3.2.6).
var (
	fixedOnce sync.Once
	fixedLit  [litTableLen]uint32
	fixedDist [distTableLen]uint32
)

func initInflateTables() {
	for s := 0; s < 256; s++ {
		litSyms[s] = hEntry(kindLit, 0, uint32(s)) | litFlag
	}
	litSyms[256] = hEntry(kindEOB, 0, 0)
	base := uint32(3)
	for s := 257; s < 285; s++ {
		extra := uint32(0)
		if s >= 265 {
			extra = uint32(s-261) / 4
		}
		litSyms[s] = hEntry(kindLen, extra, base)
		base += 1 << extra
	}
	litSyms[285] = hEntry(kindLen, 0, 258)
	// 286 and 287 stay kindBad.
	base = 1
	for s := 0; s < 30; s++ {
		extra := uint32(0)
		if s >= 4 {
			extra = uint32(s-2) / 2
		}
		distSyms[s] = hEntry(kindLen, extra, base)
		base += 1 << extra
	}
	var lens [288]uint8
	for i := range lens {
		switch {
		case i < 144:
			lens[i] = 8
		case i < 256:
			lens[i] = 9
		case i < 280:
			lens[i] = 7
		default:
			lens[i] = 8
		}
	}
	buildTable(fixedLit[:], lens[:], litRootBits, litSyms[:])
	pairLiterals(fixedLit[:], litRootBits)
	for i := range lens[:32] {
		lens[i] = 5
	}
	buildTable(fixedDist[:], lens[:32], distRootBits, distSyms[:])
}

// buildTable fills t with the canonical Huffman code of lengths (RFC 1951
// 3.2.2): a root table of 1<<root entries indexed by the next root bits of
// the stream, and sub-tables for longer codes. It returns false for a code
// that Go's compress/flate refuses: over-subscribed, or incomplete unless
// it is a single code of length 1. A code with no symbols at all is kept
// (every entry kindBad): it fails only if it is used.
func buildTable(t []uint32, lengths []uint8, root uint, syms []uint32) bool {
	var count [maxCodeLen + 1]int
	maxLen := 0
	for _, l := range lengths {
		count[l]++
		maxLen = max(maxLen, int(l))
	}
	size := 1 << root
	clear(t[:size])
	if maxLen == 0 {
		return true
	}
	// First code of each length (RFC 1951 3.2.2, step 2).
	var next [maxCodeLen + 1]int
	code := 0
	for l := 1; l <= maxCodeLen; l++ {
		if l > 1 {
			code += count[l-1]
		}
		code <<= 1
		next[l] = code
	}
	// Kraft sum in units of 2^-maxLen.
	used := 0
	for l := 1; l <= maxLen; l++ {
		used += count[l] << (maxLen - l)
	}
	if used > 1<<maxLen {
		return false // over-subscribed
	}
	if used < 1<<maxLen && !(maxLen == 1 && count[1] == 1) {
		return false // incomplete
	}
	mask := size - 1
	// Sub-table sizes: the longest code under each root prefix.
	var subBits [1 << litRootBits]uint8
	codes := next
	for _, l := range lengths {
		if int(l) <= int(root) || l == 0 {
			continue
		}
		c := codes[l]
		codes[l]++
		rev := int(bits.Reverse16(uint16(c)) >> (16 - l))
		p := rev & mask
		subBits[p] = max(subBits[p], l-uint8(root))
	}
	off := size
	for p := 0; p < size; p++ {
		if n := subBits[p]; n > 0 {
			t[p] = hEntry(kindLink, uint32(n), uint32(off)) | uint32(root)
			clear(t[off : off+1<<n])
			off += 1 << n
		}
	}
	codes = next
	for s, l := range lengths {
		if l == 0 {
			continue
		}
		c := codes[l]
		codes[l]++
		rev := int(bits.Reverse16(uint16(c)) >> (16 - l))
		if int(l) <= int(root) {
			e := syms[s] | uint32(l)
			for k := rev; k < size; k += 1 << l {
				t[k] = e
			}
			continue
		}
		link := t[rev&mask]
		n := uint(link>>8) & 31
		base := int(link >> 16)
		sl := uint(l) - root
		e := syms[s] | uint32(sl)
		for k := rev >> root; k < 1<<n; k += 1 << sl {
			t[base+k] = e
		}
	}
	return true
}

type inflater struct {
	bits  uint64 // bit buffer, next bit lowest
	nbits uint
	cur   []byte      // rest of the current IDAT payload
	src   chunkSource // the payloads after it
	over  int         // zero bytes supplied past the end of the data
	out   []byte
	pos   int
	lit   [litTableLen]uint32
	dist  [distTableLen]uint32
	cl    [1 << clRootBits]uint32
	lens  [286 + 30]uint8
}

// refill tops the bit buffer up to at least 56 bits: eight bytes at once
// while the current payload has them, byte by byte across payloads
// otherwise, and zeros past the end (counted in over, so that a stream
// that needed them is refused).
// pairLiterals makes each root entry of a litlen table whose literal code
// leaves room for a second whole literal code within the root bits decode
// both: photos filtered by PNG are mostly literals with short codes, and
// one lookup per two of them halves the serial chain of table lookups that
// bounds inflate's speed. Entries are visited from the top down, so the
// entry for the bits after the first code (a lower index) is still the
// single-symbol one when it is read.
func pairLiterals(t []uint32, root uint) {
	for i := 1<<root - 1; i >= 0; i-- {
		e := t[i]
		if e&litFlag == 0 {
			continue
		}
		l1 := uint(e & 15)
		if l1 >= root {
			continue
		}
		e2 := t[i>>l1]
		l2 := uint(e2 & 15)
		if e2&litFlag == 0 || l1+l2 > root {
			continue
		}
		t[i] = (e>>16)<<16 | (e2>>16)<<24 | pairFlag | litFlag | kindLit<<4 | uint32(l1+l2)
	}
}

func (f *inflater) refill() {
	if len(f.cur) >= 8 {
		f.bits |= binary.LittleEndian.Uint64(f.cur) << f.nbits
		f.cur = f.cur[(63-f.nbits)>>3:]
		f.nbits |= 56
		return
	}
	for f.nbits <= 56 {
		f.nextChunk()
		var b byte
		if len(f.cur) > 0 {
			b, f.cur = f.cur[0], f.cur[1:]
		} else {
			f.over++
		}
		f.bits |= uint64(b) << f.nbits
		f.nbits += 8
	}
}

// chunkSource gives the compressed stream's pieces in order (the payloads
// of consecutive IDAT chunks).
type chunkSource interface {
	next() ([]byte, bool)
}

// nextChunk moves on to the next non-empty payload, if any, when the
// current one is used up.
func (f *inflater) nextChunk() {
	for len(f.cur) == 0 {
		c, ok := f.src.next()
		if !ok {
			return
		}
		f.cur = c
	}
}

func (f *inflater) drop(n uint) {
	f.bits >>= n
	f.nbits -= n
}

// take returns the next n (≤ 32) bits.
func (f *inflater) take(n uint) uint32 {
	if f.nbits < n {
		f.refill()
	}
	v := uint32(f.bits & (1<<n - 1))
	f.drop(n)
	return v
}

func (f *inflater) truncated() bool { return f.over*8 > int(f.nbits) }

func (f *inflater) header() error {
	cmf, flg := f.take(8), f.take(8)
	if f.truncated() {
		return pngBad("not enough pixel data")
	}
	if cmf&0x0f != 8 || cmf>>4 > 7 || (cmf<<8|flg)%31 != 0 {
		return pngBad("corrupt image data: zlib: invalid header")
	}
	if flg&0x20 != 0 {
		// A preset dictionary: Go's zlib, given none, accepts only the
		// empty dictionary's Adler-32, which is 1.
		id := bits.ReverseBytes32(f.take(32))
		if id != 1 {
			return pngBad("corrupt image data: zlib: invalid dictionary")
		}
	}
	return nil
}

// block decodes one deflate block.
func (f *inflater) block() (final bool, err error) {
	h := f.take(3)
	if f.truncated() {
		return false, pngBad("not enough pixel data")
	}
	final = h&1 != 0
	switch h >> 1 {
	case 0:
		err = f.stored()
	case 1:
		fixedOnce.Do(initInflateTables)
		err = f.huffman(fixedLit[:], fixedDist[:])
	case 2:
		fixedOnce.Do(initInflateTables)
		if err = f.dynamicTables(); err == nil {
			err = f.huffman(f.lit[:], f.dist[:])
		}
	default:
		err = pngBad("corrupt image data: reserved deflate block type")
	}
	return final, err
}

// stored copies an uncompressed block: first the whole bytes still in the
// bit buffer, then straight from the payloads.
func (f *inflater) stored() error {
	f.drop(f.nbits & 7)
	n := f.take(16)
	nn := f.take(16)
	if f.truncated() {
		return pngBad("not enough pixel data")
	}
	if n != ^nn&0xffff {
		return pngBad("corrupt image data: stored block length check")
	}
	if int(n) > len(f.out)-f.pos {
		return pngBad("too much pixel data")
	}
	for ; n > 0 && f.nbits >= 8; n-- {
		f.out[f.pos] = byte(f.bits)
		f.pos++
		f.drop(8)
	}
	if n > 0 {
		// The buffer is empty; what lies above its count is a copy of
		// bytes about to be read directly (refill loads eight bytes and
		// counts fewer), which must not be OR-ed with later ones.
		f.bits = 0
	}
	for n > 0 {
		f.nextChunk()
		if len(f.cur) == 0 {
			return pngBad("not enough pixel data")
		}
		c := copy(f.out[f.pos:f.pos+int(min(n, uint32(len(f.cur))))], f.cur)
		f.cur = f.cur[c:]
		f.pos += c
		n -= uint32(c)
	}
	return nil
}

// clOrder is the order of the code length code's lengths (RFC 1951 3.2.7).
var clOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

var clSyms = func() (s [19]uint32) {
	for i := range s {
		s[i] = hEntry(kindLit, 0, uint32(i))
	}
	return s
}()

// dynamicTables reads a dynamic block's code definitions into f.lit and
// f.dist, with compress/flate's checks.
func (f *inflater) dynamicTables() error {
	nlit := int(f.take(5)) + 257
	ndist := int(f.take(5)) + 1
	nclen := int(f.take(4)) + 4
	if nlit > 286 || ndist > 30 {
		return pngBad("corrupt image data: too many deflate codes")
	}
	var cl [19]uint8
	for i := 0; i < nclen; i++ {
		cl[clOrder[i]] = uint8(f.take(3))
	}
	if f.truncated() {
		return pngBad("not enough pixel data")
	}
	if !buildTable(f.cl[:], cl[:], clRootBits, clSyms[:]) {
		return pngBad("corrupt image data: bad code length code")
	}
	n := nlit + ndist
	lens := f.lens[:n]
	for i := 0; i < n; {
		if f.nbits < 16 {
			f.refill()
		}
		e := f.cl[f.bits&(1<<clRootBits-1)]
		if (e>>4)&7 == kindBad {
			return pngBad("corrupt image data: bad code length")
		}
		f.drop(uint(e & 15))
		sym := e >> 16
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var v uint8
		switch sym {
		case 16:
			if i == 0 {
				return pngBad("corrupt image data: repeat with no previous length")
			}
			rep, v = 3+int(f.take(2)), lens[i-1]
		case 17:
			rep = 3 + int(f.take(3))
		default:
			rep = 11 + int(f.take(7))
		}
		if i+rep > n {
			return pngBad("corrupt image data: code lengths overflow")
		}
		for ; rep > 0; rep-- {
			lens[i] = v
			i++
		}
	}
	if f.truncated() {
		return pngBad("not enough pixel data")
	}
	if !buildTable(f.lit[:], lens[:nlit], litRootBits, litSyms[:]) ||
		!buildTable(f.dist[:], lens[nlit:], distRootBits, distSyms[:]) {
		return pngBad("corrupt image data: bad Huffman code")
	}
	pairLiterals(f.lit[:], litRootBits)
	return nil
}

// huffman decodes the symbols of one compressed block. The bit buffer and
// the read position in the current payload are kept in locals (the struct
// fields are written back around the rare slow refill and at the block's
// end) so that the compiler keeps them in registers; storing the payload
// slice into the struct on every fast refill would also take a GC write
// barrier each time while a collection is marking, which the decoder
// usually runs into, as its output is the first big allocation.
// A refill to 56 bits covers the longest length/distance pair:
// 15 + 5 + 15 + 13 = 48 bits.
func (f *inflater) huffman(lit, dist []uint32) error {
	const litMask = 1<<litRootBits - 1
	const distMask = 1<<distRootBits - 1
	b, nb := f.bits, f.nbits
	out, pos := f.out, f.pos
	cur := f.cur
	for {
		if nb < 48 {
			if len(cur) >= 8 {
				b |= binary.LittleEndian.Uint64(cur) << nb
				cur = cur[(63-nb)>>3:]
				nb |= 56
			} else {
				f.bits, f.nbits, f.cur = b, nb, cur
				f.refill()
				b, nb, cur = f.bits, f.nbits, f.cur
				if f.over > 16 {
					f.pos, f.cur = pos, cur
					return pngBad("not enough pixel data")
				}
			}
		}
		e := lit[b&litMask]
		if e&litFlag != 0 && len(out)-pos >= 2 {
			// One or two literals; a single one also writes the second
			// byte, which the next symbol overwrites.
			b >>= e & 15
			nb -= uint(e & 15)
			out[pos] = byte(e >> 16)
			out[pos+1] = byte(e >> 24)
			pos += 1 + int(e>>8&1)
			continue
		}
		if (e>>4)&7 == kindLink {
			b >>= e & 15
			nb -= uint(e & 15)
			e = lit[int(e>>16)+int(b&(1<<((e>>8)&31)-1))]
		}
		b >>= e & 15
		nb -= uint(e & 15)
		switch (e >> 4) & 7 {
		case kindLit:
			n := 1 + int(e>>8&1)
			if n > len(out)-pos {
				f.pos, f.cur = pos, cur
				return pngBad("too much pixel data")
			}
			out[pos] = byte(e >> 16)
			if n == 2 {
				out[pos+1] = byte(e >> 24)
			}
			pos += n
			continue
		case kindEOB:
			f.bits, f.nbits, f.pos, f.cur = b, nb, pos, cur
			return nil
		case kindBad:
			f.pos, f.cur = pos, cur
			return pngBad("corrupt image data: invalid literal/length code")
		}
		x := (e >> 8) & 31
		length := int(e>>16) + int(b&(1<<x-1))
		b >>= x
		nb -= uint(x)
		d := dist[b&distMask]
		if (d>>4)&7 == kindLink {
			b >>= d & 15
			nb -= uint(d & 15)
			d = dist[int(d>>16)+int(b&(1<<((d>>8)&31)-1))]
		}
		if (d>>4)&7 != kindLen {
			f.pos, f.cur = pos, cur
			return pngBad("corrupt image data: invalid distance code")
		}
		b >>= d & 15
		nb -= uint(d & 15)
		x = (d >> 8) & 31
		distance := int(d>>16) + int(b&(1<<x-1))
		b >>= x
		nb -= uint(x)
		if distance > pos {
			f.pos, f.cur = pos, cur
			return pngBad("corrupt image data: distance too far back")
		}
		if length > len(out)-pos {
			f.pos, f.cur = pos, cur
			return pngBad("too much pixel data")
		}
		if src := pos - distance; distance >= 8 && length <= len(out)-pos-8 {
			// Eight bytes at a time: each load is of bytes already
			// written (distance >= 8), and the up to 7 bytes written past
			// the match are inside out and overwritten next.
			for i := 0; i < length; i += 8 {
				binary.LittleEndian.PutUint64(out[pos+i:], binary.LittleEndian.Uint64(out[src+i:]))
			}
		} else {
			copyMatch(out, pos, distance, length)
		}
		pos += length
	}
}

// copyMatch copies length bytes from distance bytes back, an overlapping
// copy repeating the pattern as deflate requires.
func copyMatch(out []byte, pos, distance, length int) {
	src := pos - distance
	if distance >= length {
		copy(out[pos:pos+length], out[src:])
		return
	}
	s := out[src : pos+length]
	for i := distance; i < len(s); i++ {
		s[i] = s[i-distance]
	}
}
