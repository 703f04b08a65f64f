// Package webgpu is the device layer over the raw Dawn binding (gpu/wgpu):
// a Device owns the instance, adapter, device and queue and runs every
// WebGPU call on one goroutine locked to one OS thread (Dawn keeps error
// scopes per thread, and WaitAnyOnly callbacks fire on the waiting thread).
// Other goroutines hand it closures with Do.
//
// Typical use:
//
//	dev, err := webgpu.Open(ctx, nil)
//	...
//	err = dev.Do(ctx, func(g *webgpu.GPU) error {
//		m, err := g.Module("saxpy", src)
//		p, err := g.Pipeline(m, "main", webgpu.Constants{"WG": 256})
//		x, _ := g.Storage(n * 4)
//		webgpu.WriteSlice(g, x, 0, xs)
//		e := g.Encoder()
//		e.Dispatch(p, groups, 1, 1, x, y)
//		rb := e.ReadBack(y, 0, n*4)
//		if err := e.Submit(); err != nil { return err }
//		return webgpu.ReadSlice(rb, ys)
//	})
package webgpu

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// Device is an open WebGPU device. Its methods are safe for concurrent use;
// the closures given to Do run one at a time on the device thread.
type Device struct {
	info     AdapterInfo
	limits   wgpu.Limits // the device's (= the adapter's, requested)
	features map[wgpu.FeatureName]bool
	name     string
	initTime time.Duration

	reqs      chan func()
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu     sync.Mutex
	lost   *DeviceLostError
	closed bool
	uncapt []error // uncaptured errors not yet reported

	// owned by the device thread
	inst    wgpu.Instance
	adapter wgpu.Adapter
	dev     wgpu.Device
	queue   wgpu.Queue
	cbIDs   []uintptr
	g       *GPU
}

// Open loads the library, picks an adapter (nil opts: DefaultOptions) and
// creates a device that has the adapter's limits and its ShaderF16,
// Subgroups and TimestampQuery features when offered.
func Open(ctx context.Context, opts *Options) (*Device, error) {
	if opts == nil {
		opts = DefaultOptions()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := wgpu.Load(); err != nil {
		return nil, err
	}
	d := &Device{
		reqs: make(chan func()),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	initErr := make(chan error, 1)
	go d.loop(opts, initErr)
	select {
	case err := <-initErr:
		if err != nil {
			return nil, err
		}
		return d, nil
	case <-ctx.Done():
		go func() { // finish the init in the background, then tear it down
			if err := <-initErr; err == nil {
				d.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

func (d *Device) loop(opts *Options, initErr chan<- error) {
	runtime.LockOSThread() // never unlocked: Dawn's per-thread state dies with the thread
	defer close(d.done)
	if err := d.init(opts); err != nil {
		d.teardown()
		initErr <- err
		return
	}
	initErr <- nil
	for {
		select {
		case f := <-d.reqs:
			f()
		case <-d.quit:
			d.teardown()
			return
		}
	}
}

func (d *Device) init(opts *Options) error {
	t0 := time.Now()
	d.inst = newInstance()
	if d.inst == 0 {
		return errors.New("webgpu: wgpuCreateInstance returned NULL")
	}
	cands, refused, err := enumerate(d.inst, opts.AllowCPUAdapter)
	if err != nil {
		for _, c := range cands {
			c.handle.Release()
		}
		return err
	}
	if len(cands) == 0 {
		return &NoAdapterError{Refused: refused}
	}
	if opts.PreferIndex < 0 || opts.PreferIndex >= len(cands) {
		for _, c := range cands {
			c.handle.Release()
		}
		return &NoAdapterError{Detail: fmt.Sprintf("PreferIndex %d out of range: %d adapter(s)", opts.PreferIndex, len(cands)), Refused: refused}
	}
	for i, c := range cands {
		if i != opts.PreferIndex {
			c.handle.Release()
		}
	}
	chosen := cands[opts.PreferIndex]
	d.adapter, d.info = chosen.handle, chosen.info
	d.name = "webgpu:" + d.info.Name()
	if d.info.Type == wgpu.AdapterTypeCPU {
		softInstances.Store(d.inst, struct{}{})
	}

	var want []wgpu.FeatureName
	for _, f := range []wgpu.FeatureName{wgpu.FeatureShaderF16, wgpu.FeatureSubgroups, wgpu.FeatureTimestampQuery} {
		if d.adapter.HasFeature(f) {
			want = append(want, f)
		}
	}
	limits := d.info.Limits // ask for everything the adapter offers
	limits.NextInChain = nil
	// Native code needs no timestamp quantization (a browser fingerprinting
	// guard that rounds GPU timestamps).
	disabled := []*byte{cstr("timestamp_quantization")}
	toggles := &wgpu.DawnTogglesDescriptor{
		Chain:               wgpu.ChainedStruct{SType: wgpu.STypeDawnTogglesDescriptor},
		DisabledToggleCount: uintptr(len(disabled)),
		DisabledToggles:     &disabled[0],
	}
	lostInfo, lostID := wgpu.DeviceLostCallbackInfo(wgpu.CallbackModeAllowSpontaneous, d.onLost)
	uncInfo, uncID := wgpu.NewUncapturedErrorCallbackInfo(d.onUncaptured)
	d.cbIDs = append(d.cbIDs, lostID, uncID)
	label := opts.Label
	if label == "" {
		label = "zenmetrics"
	}
	desc := &wgpu.DeviceDescriptor{
		NextInChain:                 &toggles.Chain,
		Label:                       wgpu.MakeStringView(label),
		RequiredLimits:              &limits,
		DefaultQueue:                wgpu.QueueDescriptor{Label: wgpu.MakeStringView(label + " queue")},
		DeviceLostCallbackInfo:      lostInfo,
		UncapturedErrorCallbackInfo: uncInfo,
	}
	if len(want) > 0 {
		desc.RequiredFeatureCount, desc.RequiredFeatures = uintptr(len(want)), &want[0]
	}
	var (
		status wgpu.RequestDeviceStatus
		dev    wgpu.Device
		msg    string
	)
	f := d.adapter.RequestDevice(desc, wgpu.CallbackModeWaitAnyOnly, func(s wgpu.RequestDeviceStatus, h wgpu.Device, m string) {
		status, dev, msg = s, h, m
	})
	runtime.KeepAlive(desc)
	runtime.KeepAlive(toggles)
	runtime.KeepAlive(disabled)
	runtime.KeepAlive(want)
	if err := waitFuture(d.inst, f, "requestDevice"); err != nil {
		return err
	}
	if status != wgpu.RequestDeviceStatusSuccess || dev == 0 {
		return fmt.Errorf("webgpu: requestDevice on %q failed (%s): %s", d.info.Name(), status, msg)
	}
	d.dev = dev
	d.queue = dev.GetQueue()
	dev.GetLimits(&d.limits)
	d.limits.NextInChain = nil
	var sf wgpu.SupportedFeatures
	dev.GetFeatures(&sf)
	d.features = map[wgpu.FeatureName]bool{}
	for _, f := range sf.List() {
		d.features[f] = true
	}
	sf.FreeMembers()
	d.g = newGPU(d)
	d.initTime = time.Since(t0)
	return nil
}

func (d *Device) onLost(reason wgpu.DeviceLostReason, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost == nil {
		d.lost = &DeviceLostError{Device: d.name, Reason: reason.String(), Message: msg}
	}
}

func (d *Device) onUncaptured(typ wgpu.ErrorType, msg string) {
	err := d.scopeError("(uncaptured)", typ, msg, 0)
	if err == nil {
		return
	}
	d.mu.Lock()
	if len(d.uncapt) < 16 {
		d.uncapt = append(d.uncapt, err)
	}
	d.mu.Unlock()
}

// lostErr returns the device-lost error, if the device was lost.
func (d *Device) lostErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost != nil {
		return d.lost
	}
	return nil
}

func (d *Device) takeUncaptured() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.uncapt) == 0 {
		return nil
	}
	err := errors.Join(d.uncapt...)
	d.uncapt = nil
	return err
}

// Do runs fn on the device thread with every WebGPU error it causes
// captured: validation errors come back as *ValidationError, allocation
// failures as *zenmetrics.OutOfMemoryError, a lost device as
// *DeviceLostError (errors.Is zenmetrics.ErrDeviceLost). If ctx is done
// before fn starts, fn does not run; if it is done while fn runs, Do
// returns ctx.Err() at once and fn finishes on its own (GPU.Context lets it
// notice). fn must not call Do (it would wait for itself) and must not keep
// g, or call WebGPU through it, after it returns.
func (d *Device) Do(ctx context.Context, fn func(g *GPU) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return ErrClosed
	}
	res := make(chan error, 1)
	job := func() {
		if err := ctx.Err(); err != nil {
			res <- err
			return
		}
		res <- d.g.run(ctx, fn)
	}
	select {
	case d.reqs <- job:
	case <-ctx.Done():
		return ctx.Err()
	case <-d.done:
		return ErrClosed
	}
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close waits for the running closure, then releases everything in order:
// cached bind groups, pipelines, modules, pooled buffers, queue, device,
// adapter, instance. It is idempotent.
func (d *Device) Close() error {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		d.closed = true
		d.mu.Unlock()
		close(d.quit)
	})
	<-d.done
	return nil
}

func (d *Device) teardown() {
	if d.g != nil {
		d.g.releaseAll()
	}
	if d.queue != 0 {
		d.queue.Release()
		d.queue = 0
	}
	if d.dev != 0 {
		d.mu.Lock()
		closing := d.lost == nil
		d.mu.Unlock()
		d.dev.Destroy()
		if closing { // a Destroyed "loss" caused by Close is not an error
			d.mu.Lock()
			if d.lost != nil && d.lost.Reason == wgpu.DeviceLostReasonDestroyed.String() {
				d.lost = nil
			}
			d.mu.Unlock()
		}
		d.dev.Release()
		d.dev = 0
	}
	if d.adapter != 0 {
		d.adapter.Release()
		d.adapter = 0
	}
	if d.inst != 0 {
		d.inst.ProcessEvents()
		softInstances.Delete(d.inst)
		d.inst.Release()
		d.inst = 0
	}
	for _, id := range d.cbIDs {
		wgpu.Unregister(id)
	}
	d.cbIDs = nil
}

// Info describes the adapter the device runs on.
func (d *Device) Info() AdapterInfo { return d.info }

// Limits are the device's limits (the adapter's, requested in full).
func (d *Device) Limits() wgpu.Limits { return d.limits }

// HasFeature reports whether the device was created with f.
func (d *Device) HasFeature(f wgpu.FeatureName) bool { return d.features[f] }

// Name is "webgpu:<adapter name>", used as the backend name in errors.
func (d *Device) Name() string { return d.name }

// InitTime is how long instance + adapter enumeration + device creation took.
func (d *Device) InitTime() time.Duration { return d.initTime }

// waitLimit is how long one wait may go without its future completing
// before it is reported as a stall, and softWallLimit the wall-clock
// backstop for software adapters (see watchdog).
const (
	waitLimit     = 2 * time.Minute
	softWallLimit = 30 * time.Minute
)

// softInstances holds the instances whose device runs on a software
// adapter (lavapipe): their waits are timed in this process's CPU time.
var softInstances sync.Map // wgpu.Instance → struct{}

// watchdog decides when a wait has stalled. On a hardware GPU the work
// runs off the CPU and a hung device is reset by the driver (device lost),
// so 2 minutes of wall time is a generous last resort. On a software
// adapter the "GPU" is this process's own threads: lavapipe runs the
// dispatches on its queue thread, and llvmpipe compiles each kernel with
// LLVM there the first time it runs (tens of CPU seconds for a metric's
// kernels when Mesa's shader cache is cold), all inside our wait. On a
// loaded machine that work gets a small share of the cores and its wall
// time stretches without bound (a 256² pair that takes 1 s alone took
// over 2 minutes beside a full test run): the wall clock measures the
// machine's load, not a stall. So software waits are timed in this
// process's CPU time (which contention does not inflate, and which a
// shader that never ends still exhausts), with a wall-clock backstop for a
// driver that waits on nothing.
type watchdog struct {
	soft       bool
	wall0, cpu time.Duration
	wall, proc func() time.Duration // clocks; injectable for tests
}

func newWatchdog(soft bool, wall, proc func() time.Duration) *watchdog {
	w := &watchdog{soft: soft, wall: wall, proc: proc}
	w.wall0 = wall()
	if soft {
		w.cpu = proc()
	}
	return w
}

// expired returns a description of the limit passed, or "" while the wait
// may go on.
func (w *watchdog) expired() string {
	wall := w.wall() - w.wall0
	if !w.soft {
		if wall >= waitLimit {
			return "not done after 2 minutes"
		}
		return ""
	}
	if cpu := w.proc() - w.cpu; cpu >= waitLimit {
		return fmt.Sprintf("not done after %v of this process's CPU time (software adapter; %v wall)", cpu.Round(time.Second), wall.Round(time.Second))
	}
	if wall >= softWallLimit {
		return fmt.Sprintf("not done after %v (software adapter)", wall.Round(time.Second))
	}
	return ""
}

// waitFuture blocks on one future with WaitAny (callbacks fire on this
// thread), in 1-second timed waits (timed waits are enabled on our
// instances) until the watchdog calls it a stall.
func waitFuture(inst wgpu.Instance, f wgpu.Future, what string) error {
	if f.ID == 0 {
		return fmt.Errorf("webgpu: %s: invalid future", what)
	}
	info := []wgpu.FutureWaitInfo{{Future: f}}
	// Most futures waited on here are already complete (error scopes,
	// maps after the GPU has finished): a wait that does not block settles
	// them without the watchdog's set-up (a process CPU clock read).
	if st := inst.WaitAny(info, 0); st == wgpu.WaitStatusSuccess && info[0].Completed != 0 {
		return nil
	}
	_, soft := softInstances.Load(inst)
	if _, ok := processCPU(); !ok {
		soft = false // no CPU clock here: the wall clock it is
	}
	t0 := time.Now()
	wd := newWatchdog(soft, func() time.Duration { return time.Since(t0) },
		func() time.Duration { c, _ := processCPU(); return c })
	for {
		st := inst.WaitAny(info, uint64(time.Second))
		if st == wgpu.WaitStatusSuccess && info[0].Completed != 0 {
			return nil
		}
		if st != wgpu.WaitStatusSuccess && st != wgpu.WaitStatusTimedOut {
			return fmt.Errorf("webgpu: %s: WaitAny: %s", what, st)
		}
		if why := wd.expired(); why != "" {
			return fmt.Errorf("webgpu: %s: %s", what, why)
		}
	}
}

func cstr(s string) *byte {
	b := append([]byte(s), 0)
	return &b[0]
}
