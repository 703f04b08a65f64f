package webgpu

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// GPU is the device as seen from inside Do: every method runs WebGPU calls
// and must only be called from the closure Do runs. Objects it returns
// (modules, pipelines, buffers) belong to the device and may be kept across
// Do calls, but are likewise only used inside Do.
type GPU struct {
	d   *Device
	ctx context.Context

	modules   map[string]*Module
	pipelines map[string]*Pipeline
	bindings  map[string]wgpu.BindGroup
	bindByBuf map[*Buffer][]string
	pool      map[poolKey][]*Buffer
	poolBytes int64
	nextID    uint64
	live      map[*Buffer]struct{}
	querySet  wgpu.QuerySet
	queryCap  uint32
}

type poolKey struct {
	size  uint64
	usage wgpu.BufferUsage
}

func newGPU(d *Device) *GPU {
	return &GPU{d: d, modules: map[string]*Module{}, pipelines: map[string]*Pipeline{},
		bindings: map[string]wgpu.BindGroup{}, bindByBuf: map[*Buffer][]string{}, pool: map[poolKey][]*Buffer{}, live: map[*Buffer]struct{}{}}
}

// Context is the ctx of the Do call running now: long closures may check it
// between submits.
func (g *GPU) Context() context.Context { return g.ctx }

// Device is the device this GPU belongs to.
func (g *GPU) Device() *Device { return g.d }

// Limits are the device limits.
func (g *GPU) Limits() *wgpu.Limits { return &g.d.limits }

// HasFeature reports whether the device was created with f.
func (g *GPU) HasFeature(f wgpu.FeatureName) bool { return g.d.features[f] }

// Raw exposes the native handles for what the helpers do not cover.
func (g *GPU) Raw() (wgpu.Instance, wgpu.Device, wgpu.Queue) { return g.d.inst, g.d.dev, g.d.queue }

func (g *GPU) run(ctx context.Context, fn func(*GPU) error) (err error) {
	if err := g.d.lostErr(); err != nil {
		return err
	}
	g.ctx = ctx
	defer func() { g.ctx = nil }()
	dev := g.d.dev
	dev.PushErrorScope(wgpu.ErrorFilterInternal)
	dev.PushErrorScope(wgpu.ErrorFilterOutOfMemory)
	dev.PushErrorScope(wgpu.ErrorFilterValidation)
	fnErr := func() (err error) {
		defer zenmetrics.Recover(&err)
		return fn(g)
	}()
	var scopeErrs []error
	for i := 0; i < 3; i++ {
		if e := g.popScope("Do", 0); e != nil {
			scopeErrs = append(scopeErrs, e)
		}
	}
	g.d.inst.ProcessEvents()
	if lost := g.d.lostErr(); lost != nil {
		return lost
	}
	if fnErr != nil {
		return fnErr
	}
	if len(scopeErrs) > 0 {
		return errors.Join(scopeErrs...)
	}
	return g.d.takeUncaptured()
}

// popScopeMode is how popScope asks for its callback: AllowSpontaneous
// lets Dawn answer inside PopErrorScope (the scope's errors are known by
// then), which saves a WaitAny per scope, three per Device.Do; where the
// callback has not fired when PopErrorScope returns, popScope waits for
// it as before.
var popScopeMode = wgpu.CallbackModeAllowSpontaneous

// popScope pops one error scope and types its error.
func (g *GPU) popScope(op string, requested int64) error {
	var (
		status wgpu.PopErrorScopeStatus
		typ    wgpu.ErrorType
		msg    string
	)
	fired := false
	f := g.d.dev.PopErrorScope(popScopeMode, func(s wgpu.PopErrorScopeStatus, t wgpu.ErrorType, m string) {
		status, typ, msg, fired = s, t, m, true
	})
	if !fired {
		if err := waitFuture(g.d.inst, f, "popErrorScope"); err != nil {
			return err
		}
	}
	if status != wgpu.PopErrorScopeStatusSuccess {
		if lost := g.d.lostErr(); lost != nil {
			return lost
		}
		return fmt.Errorf("webgpu: popErrorScope: %s: %s", status, msg)
	}
	return g.d.scopeError(op, typ, msg, requested)
}

// ---------------------------------------------------------------- modules

// Module is a compiled WGSL shader module.
type Module struct {
	h     wgpu.ShaderModule
	label string
	// Messages holds the compiler's warnings/info (errors fail compilation).
	Messages []string
}

// Module compiles WGSL once per distinct source (cached); compilation
// errors come back as *ValidationError with the compiler's messages.
func (g *GPU) Module(label, source string) (*Module, error) {
	if m := g.modules[source]; m != nil {
		return m, nil
	}
	dev := g.d.dev
	dev.PushErrorScope(wgpu.ErrorFilterValidation)
	h := dev.CreateShaderModuleWGSL(label, source)
	var msgs []string
	hasErr := false
	f := h.GetCompilationInfo(wgpu.CallbackModeWaitAnyOnly, func(s wgpu.CompilationInfoRequestStatus, info *wgpu.CompilationInfo) {
		for _, m := range info.List() {
			if m.Type == wgpu.CompilationMessageTypeError {
				hasErr = true
			}
			msgs = append(msgs, fmt.Sprintf("%s:%d:%d: %s: %s", label, m.LineNum, m.LinePos, m.Type, m.Message.String()))
		}
	})
	waitErr := waitFuture(g.d.inst, f, "getCompilationInfo")
	scopeErr := g.popScope(fmt.Sprintf("compile %q", label), 0)
	if waitErr != nil || scopeErr != nil || hasErr || h == 0 {
		if h != 0 {
			h.Release()
		}
		var ve *ValidationError
		switch {
		case errors.As(scopeErr, &ve):
			ve.Compilation = msgs
			return nil, ve
		case scopeErr != nil:
			return nil, scopeErr
		case waitErr != nil:
			return nil, waitErr
		}
		return nil, &ValidationError{Op: fmt.Sprintf("compile %q", label), Message: strings.Join(msgs, "\n"), Compilation: msgs}
	}
	m := &Module{h: h, label: label, Messages: msgs}
	g.modules[source] = m
	return m, nil
}

// ---------------------------------------------------------------- pipelines

// Constants are values for WGSL `override` declarations (by name or id).
type Constants map[string]float64

// BindingKind is the type of one buffer binding in an explicit layout.
type BindingKind uint8

const (
	// Storage is var<storage, read_write>.
	Storage BindingKind = iota
	// ReadOnly is var<storage, read>.
	ReadOnly
	// Uniform is var<uniform>.
	Uniform
)

// PipelineSpec describes a compute pipeline.
type PipelineSpec struct {
	Module    *Module
	Entry     string
	Constants Constants
	// Layout gives explicit bind group layouts: Layout[group][binding].
	// Pipelines with equal layouts can share bind groups. nil: automatic
	// layout, derived from the shader (bind groups then fit only this
	// pipeline).
	Layout [][]BindingKind
}

// Pipeline is a compute pipeline.
type Pipeline struct {
	h       wgpu.ComputePipeline
	label   string
	layouts []wgpu.BindGroupLayout // per group; filled lazily for automatic layouts
	layout  wgpu.PipelineLayout
	auto    bool
}

// Pipeline creates (or returns the cached) pipeline for entry with the given
// override constants and an automatic layout.
func (g *GPU) Pipeline(m *Module, entry string, c Constants) (*Pipeline, error) {
	return g.ComputePipeline(PipelineSpec{Module: m, Entry: entry, Constants: c})
}

// ComputePipeline creates (or returns the cached) pipeline for spec.
func (g *GPU) ComputePipeline(spec PipelineSpec) (*Pipeline, error) {
	if spec.Module == nil {
		return nil, errors.New("webgpu: ComputePipeline: nil module")
	}
	key := pipelineKey(spec)
	if p := g.pipelines[key]; p != nil {
		return p, nil
	}
	dev := g.d.dev
	dev.PushErrorScope(wgpu.ErrorFilterValidation)
	p, desc, consts := g.pipelineDesc(spec)
	p.h = dev.CreateComputePipeline(desc)
	runtime.KeepAlive(consts)
	if err := g.popScope(fmt.Sprintf("create pipeline %q", p.label), 0); err != nil {
		p.release()
		return nil, err
	}
	g.pipelines[key] = p
	return p, nil
}

// ComputePipelines creates (or returns the cached) pipelines for specs,
// all at once: each is started with wgpuDeviceCreateComputePipelineAsync
// before the first is waited for, so Dawn's worker threads compile them
// side by side. A metric's kernels compiled one after the other cost the
// sum of the driver's compile times (seen on an H200 with a cold shader
// cache: 2.6 s for SSIMULACRA2's, 1 s for Butteraugli's, the first
// batch's whole start-up); side by side they cost about the slowest one.
// The pipelines are the same objects the serial path makes. On error
// nothing new is kept.
func (g *GPU) ComputePipelines(specs []PipelineSpec) ([]*Pipeline, error) {
	out := make([]*Pipeline, len(specs))
	type pending struct {
		p      *Pipeline
		key    string
		desc   *wgpu.ComputePipelineDescriptor
		consts []wgpu.ConstantEntry
		f      wgpu.Future
		status wgpu.CreatePipelineAsyncStatus
		h      wgpu.ComputePipeline
		msg    string
		done   bool
	}
	var pend []*pending
	byKey := map[string]*pending{}
	at := make([]*pending, len(specs))
	dev := g.d.dev
	var firstErr error
	for i, spec := range specs {
		if spec.Module == nil {
			firstErr = errors.New("webgpu: ComputePipelines: nil module")
			break
		}
		key := pipelineKey(spec)
		if p := g.pipelines[key]; p != nil {
			out[i] = p
			continue
		}
		if q := byKey[key]; q != nil {
			at[i] = q
			continue
		}
		// Layout objects are created synchronously: their errors come
		// back through this scope, the pipeline's through its callback.
		dev.PushErrorScope(wgpu.ErrorFilterValidation)
		p, desc, consts := g.pipelineDesc(spec)
		if err := g.popScope(fmt.Sprintf("create pipeline layout %q", p.label), 0); err != nil {
			p.release()
			firstErr = err
			break
		}
		q := &pending{p: p, key: key, desc: desc, consts: consts}
		q.f = dev.CreateComputePipelineAsync(desc, wgpu.CallbackModeWaitAnyOnly,
			func(st wgpu.CreatePipelineAsyncStatus, h wgpu.ComputePipeline, msg string) {
				q.status, q.h, q.msg, q.done = st, h, msg, true
			})
		pend = append(pend, q)
		byKey[key] = q
		at[i] = q
	}
	// Every started creation is waited for, even after an error, so no
	// callback outlives this call.
	for _, q := range pend {
		if err := waitFuture(g.d.inst, q.f, "createComputePipelineAsync"); err != nil && firstErr == nil {
			firstErr = err
		}
		runtime.KeepAlive(q.desc)
		runtime.KeepAlive(q.consts)
		q.p.h = q.h
		if !q.done && firstErr == nil {
			firstErr = fmt.Errorf("webgpu: create pipeline %q: callback did not run", q.p.label)
		} else if q.done && q.status != wgpu.CreatePipelineAsyncStatusSuccess && firstErr == nil {
			op := fmt.Sprintf("create pipeline %q", q.p.label)
			if q.status == wgpu.CreatePipelineAsyncStatusValidationError {
				firstErr = &ValidationError{Op: op, Message: q.msg}
			} else {
				firstErr = &InternalError{Op: op, Type: fmt.Sprintf("CreatePipelineAsyncStatus(%d)", q.status), Message: q.msg}
			}
		}
	}
	if firstErr != nil {
		for _, q := range pend {
			q.p.release()
		}
		return nil, firstErr
	}
	for _, q := range pend {
		g.pipelines[q.key] = q.p
	}
	for i, q := range at {
		if q != nil {
			out[i] = q.p
		}
	}
	return out, nil
}

// pipelineDesc builds spec's explicit layouts (none for an automatic
// layout) and its descriptor, inside the caller's error scope. consts must
// be kept alive until the pipeline is created.
func (g *GPU) pipelineDesc(spec PipelineSpec) (p *Pipeline, desc *wgpu.ComputePipelineDescriptor, consts []wgpu.ConstantEntry) {
	label := spec.Module.label + ":" + spec.Entry
	names := make([]string, 0, len(spec.Constants))
	for k := range spec.Constants {
		names = append(names, k)
	}
	sort.Strings(names)
	consts = make([]wgpu.ConstantEntry, len(names))
	for i, k := range names {
		consts[i] = wgpu.ConstantEntry{Key: wgpu.MakeStringView(k), Value: spec.Constants[k]}
	}
	dev := g.d.dev
	p = &Pipeline{label: label, auto: spec.Layout == nil}
	if spec.Layout != nil {
		for gi, group := range spec.Layout {
			entries := make([]wgpu.BindGroupLayoutEntry, len(group))
			for bi, k := range group {
				bt := wgpu.BufferBindingTypeStorage
				switch k {
				case ReadOnly:
					bt = wgpu.BufferBindingTypeReadOnlyStorage
				case Uniform:
					bt = wgpu.BufferBindingTypeUniform
				}
				entries[bi] = wgpu.BindGroupLayoutEntry{Binding: uint32(bi), Visibility: wgpu.ShaderStageCompute,
					Buffer: wgpu.BufferBindingLayout{Type: bt}}
			}
			desc := &wgpu.BindGroupLayoutDescriptor{Label: wgpu.MakeStringView(fmt.Sprintf("%s/group%d", label, gi)),
				EntryCount: uintptr(len(entries))}
			if len(entries) > 0 {
				desc.Entries = &entries[0]
			}
			p.layouts = append(p.layouts, dev.CreateBindGroupLayout(desc))
			runtime.KeepAlive(entries)
		}
		pld := &wgpu.PipelineLayoutDescriptor{Label: wgpu.MakeStringView(label), BindGroupLayoutCount: uintptr(len(p.layouts))}
		if len(p.layouts) > 0 {
			pld.BindGroupLayouts = &p.layouts[0]
		}
		p.layout = dev.CreatePipelineLayout(pld)
		runtime.KeepAlive(p.layouts)
	}
	desc = &wgpu.ComputePipelineDescriptor{
		Label:  wgpu.MakeStringView(label),
		Layout: p.layout,
		Compute: wgpu.ComputeState{Module: spec.Module.h, EntryPoint: wgpu.MakeStringView(spec.Entry),
			ConstantCount: uintptr(len(consts))},
	}
	if len(consts) > 0 {
		desc.Compute.Constants = &consts[0]
	}
	return p, desc, consts
}

func pipelineKey(s PipelineSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%p|%s|", s.Module, s.Entry)
	names := make([]string, 0, len(s.Constants))
	for k := range s.Constants {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(s.Constants[k], 'g', -1, 64))
		b.WriteByte(',')
	}
	if s.Layout != nil {
		fmt.Fprintf(&b, "|%v", s.Layout)
	}
	return b.String()
}

func (p *Pipeline) groupLayout(group uint32) wgpu.BindGroupLayout {
	for uint32(len(p.layouts)) <= group {
		p.layouts = append(p.layouts, 0)
	}
	if p.layouts[group] == 0 && p.auto {
		p.layouts[group] = p.h.GetBindGroupLayout(group)
	}
	return p.layouts[group]
}

func (p *Pipeline) release() {
	for _, l := range p.layouts {
		if l != 0 {
			l.Release()
		}
	}
	p.layouts = nil
	if p.layout != 0 {
		p.layout.Release()
	}
	if p.h != 0 {
		p.h.Release()
	}
}

// ---------------------------------------------------------------- buffers

// Usage is a buffer usage mask (wgpu.BufferUsage*).
type Usage = wgpu.BufferUsage

// Buffer is a GPU buffer.
type Buffer struct {
	h      wgpu.Buffer
	size   uint64 // as created; bindings use it
	usage  Usage
	id     uint64
	pooled bool
	free   bool
	g      *GPU
}

// Size is the buffer's size in bytes (pooled buffers: rounded up to 4).
func (b *Buffer) Size() int64 { return int64(b.size) }

// Handle is the native buffer.
func (b *Buffer) Handle() wgpu.Buffer { return b.h }

// NewBuffer creates a buffer (not pooled) under an OutOfMemory error scope:
// an allocation failure or a size beyond maxBufferSize returns
// *zenmetrics.OutOfMemoryError.
func (g *GPU) NewBuffer(size int64, usage Usage, label string) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("webgpu: buffer size %d: %w", size, zenmetrics.ErrBadInput)
	}
	sz := uint64(size) // exact: pooled and staging sizes are rounded to 4 by their callers
	if sz > g.d.limits.MaxBufferSize {
		return nil, &zenmetrics.OutOfMemoryError{Backend: g.d.name, Requested: size, Free: -1,
			Detail: fmt.Sprintf("exceeds maxBufferSize %d", g.d.limits.MaxBufferSize)}
	}
	dev := g.d.dev
	dev.PushErrorScope(wgpu.ErrorFilterOutOfMemory)
	h := dev.CreateBuffer(&wgpu.BufferDescriptor{Label: wgpu.MakeStringView(label), Usage: usage, Size: sz})
	if err := g.popScope(fmt.Sprintf("create buffer %q", label), size); err != nil {
		if h != 0 {
			h.Destroy()
			h.Release()
		}
		return nil, err
	}
	if h == 0 {
		return nil, &zenmetrics.OutOfMemoryError{Backend: g.d.name, Requested: size, Free: -1, Detail: "wgpuDeviceCreateBuffer returned NULL"}
	}
	g.nextID++
	b := &Buffer{h: h, size: sz, usage: usage, id: g.nextID, g: g}
	g.live[b] = struct{}{}
	return b, nil
}

// Acquire returns a pooled buffer of exactly this size (rounded up to 4)
// and usage, creating one only when the pool has none free. Give it back
// with Release; in steady state nothing is allocated.
func (g *GPU) Acquire(size int64, usage Usage) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("webgpu: buffer size %d: %w", size, zenmetrics.ErrBadInput)
	}
	k := poolKey{(uint64(size) + 3) &^ 3, usage}
	if l := g.pool[k]; len(l) > 0 {
		b := l[len(l)-1]
		g.pool[k] = l[:len(l)-1]
		g.poolBytes -= int64(b.size)
		b.free = false
		return b, nil
	}
	b, err := g.NewBuffer(int64(k.size), usage, "pooled")
	if err != nil {
		return nil, err
	}
	b.pooled = true
	return b, nil
}

// Storage acquires a pooled storage buffer (Storage|CopySrc|CopyDst).
func (g *GPU) Storage(size int64) (*Buffer, error) {
	return g.Acquire(size, wgpu.BufferUsageStorage|wgpu.BufferUsageCopySrc|wgpu.BufferUsageCopyDst)
}

// Uniform acquires a pooled uniform buffer (Uniform|CopyDst).
func (g *GPU) Uniform(size int64) (*Buffer, error) {
	return g.Acquire(size, wgpu.BufferUsageUniform|wgpu.BufferUsageCopyDst)
}

// Release gives a pooled buffer back to the pool (destroys others). Work
// already submitted that uses it is unaffected.
func (b *Buffer) Release() {
	if b == nil || b.h == 0 || b.free {
		return
	}
	if !b.pooled {
		b.Destroy()
		return
	}
	b.free = true
	k := poolKey{b.size, b.usage}
	b.g.pool[k] = append(b.g.pool[k], b)
	b.g.poolBytes += int64(b.size)
}

// Destroy frees the buffer's memory now and drops bind groups using it.
func (b *Buffer) Destroy() {
	if b == nil || b.h == 0 {
		return
	}
	g := b.g
	for _, k := range g.bindByBuf[b] {
		if bg, ok := g.bindings[k]; ok {
			bg.Release()
			delete(g.bindings, k)
		}
	}
	delete(g.bindByBuf, b)
	delete(g.live, b)
	b.h.Destroy()
	b.h.Release()
	b.h = 0
}

// PoolBytes is the size of the free buffers held in the pool.
func (g *GPU) PoolBytes() int64 { return g.poolBytes }

// TrimPool destroys every free pooled buffer.
func (g *GPU) TrimPool() {
	for k, l := range g.pool {
		for _, b := range l {
			b.Destroy()
		}
		delete(g.pool, k)
	}
	g.poolBytes = 0
}

// Write copies data into b at off through the queue (ordered before any
// later Submit). Sizes that are not a multiple of 4 are zero-padded.
func (g *GPU) Write(b *Buffer, off int64, data []byte) {
	if len(data) == 0 {
		return
	}
	if len(data)%4 != 0 {
		p := make([]byte, (len(data)+3)&^3)
		copy(p, data)
		data = p
	}
	g.d.queue.WriteBuffer(b.h, uint64(off), data)
}

// WriteSlice writes a slice of plain numbers (float32, uint32, ...) into b.
func WriteSlice[T any](g *GPU, b *Buffer, off int64, s []T) {
	if len(s) == 0 {
		return
	}
	var z T
	g.Write(b, off, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z))))
	runtime.KeepAlive(s)
}

// bindGroup returns the cached bind group of p's group for these buffers
// (whole buffers, bindings 0..n-1).
func (g *GPU) bindGroup(p *Pipeline, group uint32, bufs []*Buffer) wgpu.BindGroup {
	return g.bindGroupRanges(p, group, bufs, nil)
}

// bindGroupRanges is bindGroup with binding i limited to the byte range
// rng[i] of bufs[i] (nil, or a zero range: the whole buffer).
func (g *GPU) bindGroupRanges(p *Pipeline, group uint32, bufs []*Buffer, rng []Range) wgpu.BindGroup {
	layout := p.groupLayout(group)
	// The key is built in a stack buffer and looked up without a string
	// allocation (m[string(b)]): this runs for every dispatch of every
	// score, 20–80 times a score, where fmt cost a few µs each.
	var kbuf [256]byte
	kb := strconv.AppendUint(kbuf[:0], uint64(uintptr(layout)), 16)
	for i, b := range bufs {
		kb = append(kb, ',')
		kb = strconv.AppendUint(kb, uint64(b.id), 10)
		if i < len(rng) && rng[i] != (Range{}) {
			kb = append(kb, '@')
			kb = strconv.AppendUint(kb, uint64(rng[i].Off), 10)
			kb = append(kb, '+')
			kb = strconv.AppendUint(kb, uint64(rng[i].Size), 10)
		}
	}
	if bg, ok := g.bindings[string(kb)]; ok {
		return bg
	}
	key := string(kb)
	entries := make([]wgpu.BindGroupEntry, len(bufs))
	for i, b := range bufs {
		entries[i] = wgpu.BindGroupEntry{Binding: uint32(i), Buffer: b.h, Offset: 0, Size: b.size}
		if i < len(rng) && rng[i] != (Range{}) {
			entries[i].Offset, entries[i].Size = uint64(rng[i].Off), uint64(rng[i].Size)
		}
	}
	desc := &wgpu.BindGroupDescriptor{Label: wgpu.MakeStringView(p.label), Layout: layout, EntryCount: uintptr(len(entries))}
	if len(entries) > 0 {
		desc.Entries = &entries[0]
	}
	bg := g.d.dev.CreateBindGroup(desc)
	runtime.KeepAlive(entries)
	g.bindings[key] = bg
	for _, b := range bufs {
		g.bindByBuf[b] = append(g.bindByBuf[b], key)
	}
	return bg
}

// ---------------------------------------------------------------- encoding

// Encoder records dispatches and copies into one command buffer.
// Consecutive dispatches share a compute pass.
type Encoder struct {
	g     *GPU
	enc   wgpu.CommandEncoder
	pass  wgpu.ComputePassEncoder
	reads []*Readback
	// timestamps
	timedNext  string
	timedNames []string
	tsResolve  *Buffer
	tsRead     *Readback
	submitted  bool
	// cmd is the finished command buffer (Finish), 0 before.
	cmd wgpu.CommandBuffer
}

// Encoder starts a command encoder.
func (g *GPU) Encoder() *Encoder {
	return &Encoder{g: g, enc: g.d.dev.CreateCommandEncoder(nil)}
}

func (e *Encoder) beginPass() {
	if e.pass != 0 {
		return
	}
	var desc *wgpu.ComputePassDescriptor
	if e.timedNext != "" {
		i := uint32(len(e.timedNames))
		desc = &wgpu.ComputePassDescriptor{TimestampWrites: &wgpu.PassTimestampWrites{
			QuerySet: e.g.querySet, BeginningOfPassWriteIndex: 2 * i, EndOfPassWriteIndex: 2*i + 1}}
		e.timedNames = append(e.timedNames, e.timedNext)
		e.timedNext = ""
	}
	e.pass = e.enc.BeginComputePass(desc)
}

func (e *Encoder) endPass() {
	if e.pass != 0 {
		e.pass.End()
		e.pass.Release()
		e.pass = 0
	}
}

// Dispatch records one dispatch of p with bufs bound whole to group 0
// (binding i = bufs[i]); the bind group is cached.
func (e *Encoder) Dispatch(p *Pipeline, x, y, z uint32, bufs ...*Buffer) {
	e.DispatchGroups(p, x, y, z, bufs)
}

// DispatchGroups is Dispatch with several bind groups: groups[i] binds to
// group i.
func (e *Encoder) DispatchGroups(p *Pipeline, x, y, z uint32, groups ...[]*Buffer) {
	e.beginPass()
	e.pass.SetPipeline(p.h)
	for gi, bufs := range groups {
		e.pass.SetBindGroup(uint32(gi), e.g.bindGroup(p, uint32(gi), bufs), nil)
	}
	e.pass.DispatchWorkgroups(x, y, z)
}

// DispatchIndirect dispatches with the workgroup counts read from three
// u32s at off in indirect (which needs wgpu.BufferUsageIndirect).
func (e *Encoder) DispatchIndirect(p *Pipeline, indirect *Buffer, off int64, bufs ...*Buffer) {
	e.beginPass()
	e.pass.SetPipeline(p.h)
	e.pass.SetBindGroup(0, e.g.bindGroup(p, 0, bufs), nil)
	e.pass.DispatchWorkgroupsIndirect(indirect.h, uint64(off))
}

// Copy records a buffer-to-buffer copy (offsets and size multiples of 4).
func (e *Encoder) Copy(src *Buffer, srcOff int64, dst *Buffer, dstOff int64, n int64) {
	e.endPass()
	e.enc.CopyBufferToBuffer(src.h, uint64(srcOff), dst.h, uint64(dstOff), uint64(n))
}

// Clear records zero-filling all of b.
func (e *Encoder) Clear(b *Buffer) {
	e.endPass()
	e.enc.ClearBuffer(b.h, 0, b.size)
}

// Readback is data copied out of a buffer by a submitted encoder.
type Readback struct {
	g       *GPU
	staging *Buffer
	n       int64
	done    bool
	// Poll's map: started once, its result kept for Read.
	fut    wgpu.Future
	status wgpu.MapAsyncStatus
	msg    string
}

// mapAsync starts mapping the staging buffer for reading (once).
func (r *Readback) mapAsync() {
	if r.fut.ID != 0 {
		return
	}
	n4 := uintptr((r.n + 3) &^ 3)
	r.fut = r.staging.h.MapAsync(wgpu.MapModeRead, 0, n4, wgpu.CallbackModeWaitAnyOnly, func(s wgpu.MapAsyncStatus, m string) {
		r.status, r.msg = s, m
	})
}

// Poll reports, without waiting, whether the GPU has finished the work
// before the read-back (then Read does not wait). It lets a caller wait
// off the device thread, leaving it free for other work meanwhile (device
// thread; call it in short Do calls).
func (r *Readback) Poll() (bool, error) { return r.PollFor(0) }

// PollFor is Poll that blocks for up to timeout (rounded down to whole
// nanoseconds) until the GPU has finished; Dawn wakes the wait when it
// has (device thread; keep timeout short so other callers get the device
// thread between waits).
func (r *Readback) PollFor(timeout time.Duration) (bool, error) {
	if r.done {
		return false, errors.New("webgpu: Readback polled after Read")
	}
	r.mapAsync()
	if r.fut.ID == 0 {
		return false, errors.New("webgpu: mapAsync: invalid future")
	}
	info := []wgpu.FutureWaitInfo{{Future: r.fut}}
	st := r.g.d.inst.WaitAny(info, uint64(max(timeout, 0)))
	switch {
	case st == wgpu.WaitStatusSuccess && info[0].Completed != 0:
		return true, nil
	case st == wgpu.WaitStatusSuccess || st == wgpu.WaitStatusTimedOut:
		return false, nil
	}
	return false, fmt.Errorf("webgpu: read-back: WaitAny: %s", st)
}

// ReadBack records a copy of n bytes of b at off into a pooled staging
// buffer; after Submit, Readback.Read returns them.
func (e *Encoder) ReadBack(b *Buffer, off, n int64) (*Readback, error) {
	e.endPass()
	n4 := (n + 3) &^ 3
	st, err := e.g.Acquire(n4, wgpu.BufferUsageMapRead|wgpu.BufferUsageCopyDst)
	if err != nil {
		return nil, err
	}
	e.enc.CopyBufferToBuffer(b.h, uint64(off), st.h, 0, uint64(n4))
	r := &Readback{g: e.g, staging: st, n: n}
	e.reads = append(e.reads, r)
	return r, nil
}

// Timestamps reports whether timed passes record real GPU times.
func (g *GPU) Timestamps() bool { return g.d.features[wgpu.FeatureTimestampQuery] }

const maxTimedPasses = 64

// TimedPass ends the current pass; the next dispatches go into a new pass
// whose GPU start/end times are recorded under label (when the device has
// TimestampQuery; otherwise a no-op). Read them after Submit with PassTimes.
func (e *Encoder) TimedPass(label string) {
	e.endPass()
	if !e.g.Timestamps() || len(e.timedNames) >= maxTimedPasses {
		return
	}
	if e.g.querySet == 0 {
		e.g.queryCap = 2 * maxTimedPasses
		e.g.querySet = e.g.d.dev.CreateQuerySet(&wgpu.QuerySetDescriptor{
			Label: wgpu.MakeStringView("timestamps"), Type: wgpu.QueryTypeTimestamp, Count: e.g.queryCap})
	}
	e.timedNext = label
}

// Submit finishes the command buffer (unless Finish did) and submits it.
func (e *Encoder) Submit() error {
	if e.submitted {
		return errors.New("webgpu: encoder submitted twice")
	}
	if err := e.Finish(); err != nil {
		return err
	}
	e.g.d.queue.Submit([]wgpu.CommandBuffer{e.cmd})
	e.cmd.Release()
	e.cmd = 0
	e.submitted = true
	return nil
}

// Finish ends recording: the command buffer is complete and Submit only
// hands it to the queue. It lets a caller record and finish ahead (e.g.
// while the upload it copies from is still being filled) and keep the
// submit itself short. Idempotent.
func (e *Encoder) Finish() error {
	if e.cmd != 0 {
		return nil
	}
	if e.submitted {
		return errors.New("webgpu: encoder finished after submit")
	}
	e.endPass()
	if n := uint32(len(e.timedNames)); n > 0 {
		size := int64(n) * 2 * 8
		rs, err := e.g.Acquire(size, wgpu.BufferUsageQueryResolve|wgpu.BufferUsageCopySrc)
		if err != nil {
			return err
		}
		e.tsResolve = rs
		e.enc.ResolveQuerySet(e.g.querySet, 0, 2*n, rs.h, 0)
		if e.tsRead, err = e.ReadBack(rs, 0, size); err != nil {
			return err
		}
	}
	e.cmd = e.enc.Finish(nil)
	e.enc.Release()
	e.enc = 0
	return nil
}

// PassTime is the GPU time of one timed pass.
type PassTime struct {
	Label      string
	BeginNS    uint64 // raw timestamps, nanoseconds
	EndNS      uint64
	DurationNS float64
}

// PassTimes maps the timestamps of a submitted encoder's timed passes.
func (e *Encoder) PassTimes() ([]PassTime, error) {
	if e.tsRead == nil {
		return nil, nil
	}
	ts := make([]uint64, 2*len(e.timedNames))
	if err := ReadSlice(e.tsRead, ts); err != nil {
		return nil, err
	}
	e.tsResolve.Release()
	out := make([]PassTime, len(e.timedNames))
	for i, l := range e.timedNames {
		b, en := ts[2*i], ts[2*i+1]
		out[i] = PassTime{Label: l, BeginNS: b, EndNS: en, DurationNS: float64(int64(en - b))}
	}
	return out, nil
}

// Read waits for the data and copies it into dst (len(dst) >= n); the
// staging buffer goes back to the pool.
func (r *Readback) Read(dst []byte) error {
	if r.done {
		return errors.New("webgpu: Readback read twice")
	}
	r.done = true
	defer r.staging.Release()
	n4 := uintptr((r.n + 3) &^ 3)
	r.mapAsync()
	if err := waitFuture(r.g.d.inst, r.fut, "mapAsync"); err != nil {
		return err
	}
	if r.status != wgpu.MapAsyncStatusSuccess {
		if lost := r.g.d.lostErr(); lost != nil {
			return lost
		}
		return fmt.Errorf("webgpu: mapAsync: %s: %s", r.status, r.msg)
	}
	p := r.staging.h.GetConstMappedRange(0, n4)
	if p == nil {
		r.staging.h.Unmap()
		return errors.New("webgpu: GetConstMappedRange returned NULL")
	}
	copy(dst, unsafe.Slice((*byte)(p), r.n))
	r.staging.h.Unmap()
	return nil
}

// ReadSlice reads a Readback into a slice of plain numbers.
func ReadSlice[T any](r *Readback, dst []T) error {
	if len(dst) == 0 {
		return r.Read(nil)
	}
	var z T
	return r.Read(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), len(dst)*int(unsafe.Sizeof(z))))
}

// Read copies len(dst) bytes of b at off to dst (one submit + map).
func (g *GPU) Read(b *Buffer, off int64, dst []byte) error {
	e := g.Encoder()
	r, err := e.ReadBack(b, off, int64(len(dst)))
	if err != nil {
		e.Discard()
		return err
	}
	if err := e.Submit(); err != nil {
		return err
	}
	return r.Read(dst)
}

// Discard drops an encoder without submitting it.
func (e *Encoder) Discard() {
	e.endPass()
	for _, r := range e.reads {
		r.staging.Release()
	}
	if e.enc != 0 {
		e.enc.Release()
		e.enc = 0
	}
	if e.cmd != 0 {
		e.cmd.Release()
		e.cmd = 0
	}
}

// WaitIdle waits until the queue has finished all submitted work.
func (g *GPU) WaitIdle() error {
	var (
		status wgpu.QueueWorkDoneStatus
		msg    string
	)
	f := g.d.queue.OnSubmittedWorkDone(wgpu.CallbackModeWaitAnyOnly, func(s wgpu.QueueWorkDoneStatus, m string) {
		status, msg = s, m
	})
	if err := waitFuture(g.d.inst, f, "onSubmittedWorkDone"); err != nil {
		return err
	}
	if status != wgpu.QueueWorkDoneStatusSuccess {
		if lost := g.d.lostErr(); lost != nil {
			return lost
		}
		return fmt.Errorf("webgpu: onSubmittedWorkDone: %s: %s", status, msg)
	}
	return nil
}

// Groups returns ceil(n / size), the workgroup count covering n items.
func Groups(n, size int) uint32 {
	if n <= 0 {
		return 0
	}
	return uint32((n + size - 1) / size)
}

func (g *GPU) releaseAll() {
	for k, bg := range g.bindings {
		bg.Release()
		delete(g.bindings, k)
	}
	g.bindByBuf = map[*Buffer][]string{}
	for k, p := range g.pipelines {
		p.release()
		delete(g.pipelines, k)
	}
	for k, m := range g.modules {
		m.h.Release()
		delete(g.modules, k)
	}
	g.TrimPool()
	for b := range g.live {
		b.Destroy()
	}
	if g.querySet != 0 {
		g.querySet.Destroy()
		g.querySet.Release()
		g.querySet = 0
	}
}
