package webgpu

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
	"github.com/zenmetrics-go/zenmetrics/wgsl"
)

// The metric kit: the small shared helper every metric's GPU package
// (gpu/webgpu/<metric>) is written on, so that none of them repeats the
// steps all of them take: compile its pipelines once per device, take and
// account the pooled buffers a reference owns, upload an image's 8/16-bit
// bytes (serially, or pipelined through mapped staging buffers filled off
// the device thread), and read a few floats back. It lives in this package
// rather than one above it because it is made of the device's internals
// (error scopes, the pool, the held-bytes and upload accounting, mapping
// for write) that would otherwise have to become public API; it holds no
// metric code. gpu/webgpu/ssim2 and gpu/webgpu/butteraugli are written on
// it and serve as examples.

// ---------------------------------------------------------------- pipelines

// Kernel is one compute pipeline of a metric, built by Compile from the
// embedded WGSL file File (wgsl.Source), with Prefix (the metric's shared
// WGSL: constants, helpers) put in front of the file's source, and stored
// in *Dst.
type Kernel struct {
	File      string
	Entry     string
	Prefix    string
	Constants Constants
	Dst       **Pipeline
}

// Compile builds every kernel (device thread). Modules are compiled once
// per distinct source and pipelines once per entry and constants (the GPU
// caches both), so kernels that share a file share its module. The
// pipelines are created side by side (GPU.ComputePipelines): a metric's
// compile costs about its slowest kernel, not the sum of them.
func Compile(g *GPU, ks []Kernel) error {
	specs := make([]PipelineSpec, len(ks))
	for i, k := range ks {
		src, err := wgsl.Source(k.File)
		if err != nil {
			return err
		}
		m, err := g.Module(k.File, k.Prefix+src)
		if err != nil {
			return err
		}
		specs[i] = PipelineSpec{Module: m, Entry: k.Entry, Constants: k.Constants}
	}
	ps, err := g.ComputePipelines(specs)
	if err != nil {
		return err
	}
	for i, k := range ks {
		*k.Dst = ps[i]
	}
	return nil
}

// Sources returns the embedded WGSL files of these names (wgsl.Source), for
// the shared code a metric puts in front of its kernels (Kernel.Prefix).
func Sources(names ...string) ([]string, error) {
	out := make([]string, len(names))
	for i, n := range names {
		src, err := wgsl.Source(n)
		if err != nil {
			return nil, err
		}
		out[i] = src
	}
	return out, nil
}

// compiledMap holds what Compiled built per device (*Device → *compiled),
// outside Device like statsMap, so the device layer does not know about
// metrics. An entry outlives a closed device (a few pointers).
var compiledMap sync.Map

type compiled struct {
	mu sync.Mutex
	m  map[string]any
}

func compiledOf(d *Device) *compiled {
	if c, ok := compiledMap.Load(d); ok {
		return c.(*compiled)
	}
	c, _ := compiledMap.LoadOrStore(d, &compiled{m: map[string]any{}})
	return c.(*compiled)
}

// Compiled returns the value build made for name on this device, calling
// build the first time (device thread). A metric keeps its pipelines (and
// whatever it probed while compiling them) in one struct under its name,
// so they are compiled once per device however many backends, references
// and strips use them. A failed build is not kept: the next call retries.
func Compiled[T any](g *GPU, name string, build func(*GPU) (*T, error)) (*T, error) {
	c := compiledOf(g.d)
	c.mu.Lock()
	v, ok := c.m[name].(*T)
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	// Only the device thread builds, so nobody else can build name now.
	v, err := build(g)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.m[name] = v
	c.mu.Unlock()
	return v, nil
}

// CompiledOn returns what Compiled built for name on d, or nil before the
// first build. Any goroutine: the value must not be changed after build.
func CompiledOn[T any](d *Device, name string) *T {
	c := compiledOf(d)
	c.mu.Lock()
	defer c.mu.Unlock()
	v, _ := c.m[name].(*T)
	return v
}

// ---------------------------------------------------------------- buffers

// Buffers is a set of pooled buffers one object owns (a prepared
// reference, a scoring scratch) and their bytes. Taking stops at the first
// error: later takes return nil and Err keeps the error, so a metric takes
// everything it needs and checks Err once; the caller then releases what
// was taken (Device.Free). Device thread for taking and dropping.
type Buffers struct {
	List  []*Buffer
	Bytes int64
	Err   error
}

// Storage takes a pooled storage buffer (Storage|CopySrc|CopyDst).
func (s *Buffers) Storage(g *GPU, size int64) *Buffer {
	if s.Err != nil {
		return nil
	}
	b, err := g.Storage(size)
	return s.keep(b, err)
}

// Uniform takes a pooled uniform buffer (Uniform|CopyDst).
func (s *Buffers) Uniform(g *GPU, size int64) *Buffer {
	if s.Err != nil {
		return nil
	}
	b, err := g.Uniform(size)
	return s.keep(b, err)
}

// Mappable takes a pooled staging buffer for uploads (MapWrite|CopySrc).
func (s *Buffers) Mappable(g *GPU, size int64) *Buffer {
	if s.Err != nil {
		return nil
	}
	b, err := g.Acquire(size, wgpu.BufferUsageMapWrite|wgpu.BufferUsageCopySrc)
	return s.keep(b, err)
}

func (s *Buffers) keep(b *Buffer, err error) *Buffer {
	if err != nil {
		s.Err = err
		return nil
	}
	s.Add(b)
	return b
}

// Planes takes len(dst) storage planes of n float32 each into dst.
func (s *Buffers) Planes(g *GPU, n int64, dst []*Buffer) {
	for i := range dst {
		dst[i] = s.Storage(g, 4*n)
	}
}

// Planes3 is three planes of n float32 (a colour image).
func (s *Buffers) Planes3(g *GPU, n int64) (p [3]*Buffer) {
	s.Planes(g, n, p[:])
	return p
}

// Add books b (taken elsewhere) as owned.
func (s *Buffers) Add(b *Buffer) {
	s.List = append(s.List, b)
	s.Bytes += b.Size()
}

// Drop gives b back to the pool and forgets it (device thread).
func (s *Buffers) Drop(b *Buffer) {
	for i, o := range s.List {
		if o == b {
			s.List = append(s.List[:i], s.List[i+1:]...)
			s.Bytes -= b.Size()
			break
		}
	}
	b.Release()
}

// Take empties the set and returns its buffers (for Device.Free); Bytes
// stays as it was (what the object held), Err is cleared.
func (s *Buffers) Take() []*Buffer {
	l := s.List
	s.List, s.Err = nil, nil
	return l
}

// Free gives bufs back to the pool on the device thread and books the held
// bytes. On a closed or lost device the buffers went with it: nothing to
// do, and no error (a Release must not fail).
func (d *Device) Free(bufs []*Buffer) {
	if len(bufs) == 0 {
		return
	}
	_ = d.Do(context.Background(), func(g *GPU) error {
		for _, b := range bufs {
			b.Release()
		}
		g.noteHeld()
		return nil
	})
}

// UniformOf takes a uniform buffer the size of *v and writes *v into it
// (v: a plain struct mirroring the WGSL one, size a multiple of 16).
func UniformOf[T any](g *GPU, s *Buffers, v *T) *Buffer {
	b := s.Uniform(g, int64(unsafe.Sizeof(*v)))
	if b != nil {
		g.Write(b, 0, Bytes(v))
	}
	return b
}

// Bytes is *v's memory as bytes (a plain struct or number: no pointers).
func Bytes[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// NoteHeld brings the device's held-bytes accounting up to date (device
// thread): call it at the end of closures that take or drop buffers, so
// that Backend.Estimate and the strip planners see them.
func (g *GPU) NoteHeld() { g.noteHeld() }

// Range is the bytes [Off, Off+Size) of a buffer bound by DispatchRanges
// (Off a multiple of the device's minStorageBufferOffsetAlignment; the
// zero Range binds the whole buffer).
type Range struct{ Off, Size int64 }

// DispatchRanges is Dispatch with binding i limited to rng[i] of bufs[i]
// (nil or zero ranges bind whole buffers): a kernel that indexes from 0
// then works on a window of the buffer, e.g. a band of an image's rows.
func (e *Encoder) DispatchRanges(p *Pipeline, x, y, z uint32, bufs []*Buffer, rng []Range) {
	e.beginPass()
	e.pass.SetPipeline(p.h)
	e.pass.SetBindGroup(0, e.g.bindGroupRanges(p, 0, bufs, rng), nil)
	e.pass.DispatchWorkgroups(x, y, z)
}

// ---------------------------------------------------------------- uploads

// StagingMin is the raw size from which uploads go through a mapped
// staging buffer rather than queue.writeBuffer (see upload.go).
const StagingMin = stagingMin

// SizeMismatch is the error for a distorted image whose size is not the
// reference's w×h, nil when it is.
func SizeMismatch(w, h int, dist *zenmetrics.Image) error {
	if dist.Width != w || dist.Height != h {
		return &zenmetrics.SizeMismatchError{RefWidth: w, RefHeight: h, DistWidth: dist.Width, DistHeight: dist.Height}
	}
	return nil
}

// RawBytes is the bytes of im's pixel memory the GPU reads: every row's
// stride but the last row's width only.
func RawBytes(im *zenmetrics.Image) int64 {
	return int64(im.Stride)*int64(im.Height-1) + int64(im.Width*im.Format.BytesPerPixel())
}

// Upload is where a metric's kernels find an image's raw 8/16-bit bytes:
// a storage buffer Raw holding them as u32 words and, for large images, a
// persistent mappable Staging buffer they go through (upload.go says why).
// Both are taken into the owner's Buffers. With Exact, a buffer of another
// size is replaced even when larger (the owner's memory is then exactly
// what this image needs); otherwise they only grow.
type Upload struct {
	Raw, Staging *Buffer
	Need         int64 // bytes of Raw in use (the last image's RawBytes)
	Exact        bool
}

func (u *Upload) fits(b *Buffer, size int64) bool {
	if b == nil {
		return false
	}
	if u.Exact {
		return b.Size() == size
	}
	return b.Size() >= size
}

// Ensure makes Raw hold at least need bytes (rounded up to 4) and records
// need as the bytes in use.
func (u *Upload) Ensure(g *GPU, s *Buffers, need int64) error {
	if err := u.ensureRaw(g, s, (need+3)&^3); err != nil {
		return err
	}
	u.Need = need
	return nil
}

// ensureRaw makes Raw at least size bytes (exactly, with Exact).
func (u *Upload) ensureRaw(g *GPU, s *Buffers, size int64) error {
	return u.replace(g, s, &u.Raw, size, wgpu.BufferUsageStorage|wgpu.BufferUsageCopySrc|wgpu.BufferUsageCopyDst)
}

// ensureStaging makes Staging at least size bytes (exactly, with Exact).
func (u *Upload) ensureStaging(g *GPU, s *Buffers, size int64) error {
	return u.replace(g, s, &u.Staging, size, wgpu.BufferUsageMapWrite|wgpu.BufferUsageCopySrc)
}

// replace gives *b back and takes a pooled buffer of size and usage in its
// place, unless *b already fits.
func (u *Upload) replace(g *GPU, s *Buffers, b **Buffer, size int64, usage Usage) error {
	if u.fits(*b, size) {
		return nil
	}
	if *b != nil {
		s.Drop(*b)
		*b = nil
	}
	nb, err := g.Acquire(size, usage)
	if err != nil {
		return err
	}
	*b = nb
	s.Add(nb)
	return nil
}

// Reserve makes Raw (and Staging, from StagingMin) at least size bytes
// now, so that uploads up to that size take no other buffers (strips
// sharing one scratch).
func (u *Upload) Reserve(g *GPU, s *Buffers, size int64) error {
	size = (size + 3) &^ 3
	if err := u.ensureRaw(g, s, size); err != nil {
		return err
	}
	if size >= stagingMin {
		return u.ensureStaging(g, s, size)
	}
	return nil
}

// Put makes Raw hold im's bytes. With an encoder and at least StagingMin
// bytes they go through Staging: mapped for writing (the previous score's
// copy out of it has finished by then), filled on several goroutines,
// unmapped, and copied into Raw as the next command of e. Otherwise (small
// images, or no encoder) through queue.writeBuffer, only the bytes the
// image covers (a 1..3 byte tail padded). The host side is booked in the
// device's UploadStats.
func (u *Upload) Put(g *GPU, e *Encoder, s *Buffers, im *zenmetrics.Image) error {
	need := RawBytes(im)
	size := (need + 3) &^ 3
	if err := u.Ensure(g, s, need); err != nil {
		return err
	}
	if e == nil || need < stagingMin {
		writeRaw(g, u.Raw, im.Pix, need)
		return nil
	}
	if err := u.ensureStaging(g, s, size); err != nil {
		return err
	}
	return fillStaging(g, e, u.Staging, u.Raw, im.Pix, need, size)
}

// Drop gives Raw and Staging back (strips that share scratch per use).
func (u *Upload) Drop(s *Buffers) {
	for _, b := range []*Buffer{u.Raw, u.Staging} {
		if b != nil {
			s.Drop(b)
		}
	}
	u.Raw, u.Staging, u.Need = nil, nil, 0
}

// ---------------------------------------------------------------- pipelined uploads

// StagingRing is a reference's pool of staging buffers for pipelined
// scores: a score fills one, mapped, on its own goroutine outside the
// device thread (Slot.Fill), and only then takes the device to unmap it
// and copy it into the reference's Upload (Upload.PutFilled) and submit;
// after the read-back the slot is mapped again (Slot.Remap) and put back.
// So with two callers, one fills while the other's work runs on the GPU.
// Slots are made on first use, up to N; the zero value with N set is
// ready.
type StagingRing struct {
	N int

	mu     sync.Mutex
	slots  chan *StagingSlot
	made   int
	closed bool
	maps   atomic.Int64 // takes that had to map their slot (Maps)
}

// StagingSlot is one mappable staging buffer and, while it is mapped, its
// bytes.
type StagingSlot struct {
	Buf *Buffer
	Mem []byte
	// tr is the score's host timeline (ZENMETRICS_PIPE_TRACE only).
	tr pipeTimes
}

// pipeTrace makes AwaitPiped print each pipelined score's host phases to
// stderr (ZENMETRICS_PIPE_TRACE=1; measurements only): take (waiting for
// a slot, mapping it), fill, submit (the reference's lock, recording and
// Queue.Submit), wait (for the GPU) and finish (read-backs, remap).
var pipeTrace = os.Getenv("ZENMETRICS_PIPE_TRACE") != ""

type pipeTimes struct{ t0, taken, filled, waited time.Time }

// Take returns a slot mapped with at least size bytes, making one (up to
// N) or waiting for one to come back. Give it back with Put.
func (p *StagingRing) Take(ctx context.Context, d *Device, size int64) (*StagingSlot, error) {
	if !pipeTrace {
		return p.take(ctx, d, size)
	}
	t0 := time.Now()
	st, err := p.take(ctx, d, size)
	if st != nil {
		st.tr = pipeTimes{t0: t0, taken: time.Now()}
	}
	return st, err
}

func (p *StagingRing) take(ctx context.Context, d *Device, size int64) (*StagingSlot, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, zenmetrics.ErrReleased
	}
	if p.slots == nil {
		p.slots = make(chan *StagingSlot, max(1, p.N))
	}
	var st *StagingSlot
	if len(p.slots) == 0 && p.made < max(1, p.N) {
		p.made++
		st = &StagingSlot{}
	}
	p.mu.Unlock()
	if st == nil {
		select {
		case st = <-p.slots:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if st.Buf != nil && st.Buf.Size() >= size && st.Mem != nil {
		return st, nil
	}
	p.maps.Add(1)
	err := d.Do(ctx, func(g *GPU) error {
		defer g.noteHeld()
		if st.Buf != nil && st.Buf.Size() < size {
			if st.Mem != nil {
				st.Buf.Handle().Unmap()
				st.Mem = nil
			}
			st.Buf.Release()
			st.Buf = nil
		}
		if st.Buf == nil {
			b, err := g.Acquire(size, wgpu.BufferUsageMapWrite|wgpu.BufferUsageCopySrc)
			if err != nil {
				return err
			}
			st.Buf = b
		}
		return st.Remap(g)
	})
	if err != nil {
		p.slots <- st
		return nil, err
	}
	return st, nil
}

// Made is how many slots the ring has made (at most N).
func (p *StagingRing) Made() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.made
}

// Maps is how many takes found their slot unmapped (new, too small, or
// not mapped again after its last use) and mapped it in a device-thread
// call of their own: a trace tells a take that waited for a slot to come
// back from one that mapped.
func (p *StagingRing) Maps() int64 { return p.maps.Load() }

// Put gives a slot back.
func (p *StagingRing) Put(st *StagingSlot) { p.slots <- st }

// Close stops new takes, waits for the slots in use to come back, unmaps
// them and returns their buffers for the owner to free.
func (p *StagingRing) Close(d *Device) []*Buffer {
	p.mu.Lock()
	p.closed = true
	n := p.made
	p.mu.Unlock()
	slots := make([]*StagingSlot, 0, n)
	for i := 0; i < n; i++ {
		slots = append(slots, <-p.slots)
	}
	var bufs []*Buffer
	for _, st := range slots {
		if st.Buf != nil {
			bufs = append(bufs, st.Buf)
		}
	}
	if len(bufs) > 0 {
		// Mapped buffers go back to the pool unmapped.
		_ = d.Do(context.Background(), func(g *GPU) error {
			for _, st := range slots {
				if st.Mem != nil {
					st.Buf.Handle().Unmap()
					st.Mem = nil
				}
			}
			return nil
		})
	}
	return bufs
}

// Fill copies pix[:need] into the mapped slot on several goroutines and
// zeroes the rest up to size; it returns the host time taken (for
// Upload.PutFilled to book). Any goroutine.
func (st *StagingSlot) Fill(pix []byte, need, size int64) time.Duration {
	t0 := time.Now()
	parallelCopy(st.Mem[:need], pix[:need])
	clear(st.Mem[need:size])
	if pipeTrace {
		st.tr.filled = time.Now()
	}
	return time.Since(t0)
}

// Remap maps the slot for writing again when it is not (device thread;
// after the copy out of it has finished, it is immediate).
func (st *StagingSlot) Remap(g *GPU) error {
	if st.Mem != nil || st.Buf == nil {
		return nil
	}
	mem, err := mapForWrite(g, st.Buf, st.Buf.Size())
	if err != nil {
		return err
	}
	st.Mem = mem
	return nil
}

// PutFilled makes Raw hold the need bytes a filled slot has: Raw is made
// large enough, the slot unmapped and its copy into Raw recorded as the
// next command of e. fill (Slot.Fill's time) is booked as the upload's
// host side.
func (u *Upload) PutFilled(g *GPU, e *Encoder, s *Buffers, st *StagingSlot, need int64, fill time.Duration) error {
	if err := u.CopyFilled(g, e, s, st, 0, (need+3)&^3, need); err != nil {
		return err
	}
	st.Unmap(g, need, fill)
	return nil
}

// CopyFilled makes Raw hold need bytes (Ensure) and records on e the copy
// of the slot's first n bytes (a multiple of 4) into Raw at byte off. The
// slot may still be mapped, even being filled: WebGPU checks a buffer's
// map state when a command buffer is submitted, not while it is recorded,
// so a caller can record a score while its upload is written. Unmap the
// slot (StagingSlot.Unmap) before e is submitted. Device thread.
func (u *Upload) CopyFilled(g *GPU, e *Encoder, s *Buffers, st *StagingSlot, off, n, need int64) error {
	if err := u.Ensure(g, s, need); err != nil {
		return err
	}
	e.Copy(st.Buf, 0, u.Raw, off, n)
	return nil
}

// Unmap unmaps a filled slot, so that the copy out of it can be submitted,
// and books fill (Fill's time) as the host side of an upload of n bytes
// (n = 0: nothing booked, for an image uploaded through several slots
// that books once). Device thread.
func (st *StagingSlot) Unmap(g *GPU, n int64, fill time.Duration) {
	if n > 0 {
		noteUploadDur(g, fill, n)
	}
	if st.Mem != nil {
		st.Buf.Handle().Unmap()
		st.Mem = nil
	}
}

// WaitReady waits until the GPU has finished the work before rb, in
// device-thread calls that each block in WaitAny on rb's map for at most
// waitSlice (Dawn wakes the call as soon as the GPU is done), so the device
// thread is free for other callers between them. It used to poll with
// sleeps of 20-200 µs in between; on an H200 an idle Go process slept far
// longer than asked (SSIMULACRA2 measured a 1.2 ms wait for 0.45 ms of GPU
// work at 1 MP, 0.44 ms blocked in WaitAny; gpu/webgpu/ssim2/host.go).
func WaitReady(ctx context.Context, d *Device, rb *Readback) error {
	for {
		var ready bool
		err := d.Do(ctx, func(g *GPU) error {
			var perr error
			ready, perr = rb.PollFor(waitSlice)
			return perr
		})
		if err != nil || ready {
			return err
		}
	}
}

// waitSlice is the longest one device-thread call of WaitReady blocks.
const waitSlice = 250 * time.Microsecond

// PipedRead is one read-back of a pipelined score and the floats it fills
// (nil Readback: none).
type PipedRead struct {
	RB  *Readback
	Dst []float32
}

// AwaitPiped ends a pipelined score whose recording and submit (on the
// device thread, with the reference's lock) returned submitErr: unless
// that failed, it waits for the GPU (WaitReady on the first read-back)
// and reads each read-back into its Dst. Whatever happens it drains every
// read-back and maps the staging slot again, so the ring keeps its buffer.
// Not on the device thread.
func AwaitPiped(ctx context.Context, d *Device, st *StagingSlot, submitErr error, reads ...PipedRead) error {
	if !pipeTrace {
		return awaitPiped(ctx, d, st, submitErr, reads)
	}
	tr, submitted := st.tr, time.Now()
	err := awaitPiped(ctx, d, st, submitErr, reads)
	us := func(a, b time.Time) float64 { return float64(b.Sub(a).Nanoseconds()) / 1e3 }
	end := time.Now()
	fmt.Fprintf(os.Stderr, "pipe %.1f MB: take %.0f fill %.0f submit %.0f wait %.0f finish %.0f total %.0f us\n",
		float64(st.Buf.Size())/1e6, us(tr.t0, tr.taken), us(tr.taken, tr.filled), us(tr.filled, submitted),
		us(submitted, st.tr.waited), us(st.tr.waited, end), us(tr.t0, end))
	return err
}

func awaitPiped(ctx context.Context, d *Device, st *StagingSlot, submitErr error, reads []PipedRead) error {
	finish := func(read bool) error {
		return d.Do(context.Background(), func(g *GPU) error {
			var err error
			for _, x := range reads {
				if x.RB == nil {
					continue
				}
				if read {
					if e := ReadSlice(x.RB, x.Dst); e != nil && err == nil {
						err = e
					}
				} else {
					_ = x.RB.Read(nil)
				}
			}
			if merr := st.Remap(g); merr != nil && err == nil {
				err = merr
			}
			return err
		})
	}
	if submitErr != nil {
		_ = finish(false)
		return submitErr
	}
	for _, x := range reads {
		if x.RB == nil {
			continue
		}
		if err := WaitReady(ctx, d, x.RB); err != nil {
			_ = finish(false)
			return err
		}
		break
	}
	if pipeTrace {
		st.tr.waited = time.Now()
	}
	return finish(true)
}

// ---------------------------------------------------------------- read-back

// SubmitAndWait submits e, books the held bytes and waits until the queue
// is idle: the end of a Prepare, whose work must be done before the
// reference is handed out (device thread).
func (e *Encoder) SubmitAndWait() error {
	if err := e.Submit(); err != nil {
		return err
	}
	e.g.noteHeld()
	return e.g.WaitIdle()
}

// SubmitRead records the read-back of len(dst) values of b at byte offset
// off, submits e and waits for them (device thread). On error before the
// submit the encoder is discarded.
func SubmitRead[T any](e *Encoder, b *Buffer, off int64, dst []T) error {
	var z T
	rb, err := e.ReadBack(b, off, int64(len(dst))*int64(unsafe.Sizeof(z)))
	if err != nil {
		e.Discard()
		return err
	}
	if err := e.Submit(); err != nil {
		return err
	}
	return ReadSlice(rb, dst)
}

// ReadFloats copies len(dst) float32 of b at byte offset off to dst (one
// submit and map; device thread).
func (g *GPU) ReadFloats(b *Buffer, off int64, dst []float32) error {
	return SubmitRead(g.Encoder(), b, off, dst)
}
