package webgpu

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/nvml"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/sysmem"
)

// Device memory: what is free, what we hold, and a budget knob.
//
// Three sources, best first:
//
//  1. NVML (NVIDIA adapters): live free/total of the whole GPU, every
//     process included. Matched to the adapter by product name (the first
//     NVML device of that name; several equal GPUs would need the PCI bus
//     id, which Dawn's adapter info does not carry).
//  2. The adapter's device-local memory heap (Dawn's
//     AdapterPropertiesMemoryHeaps) minus what this process holds: a
//     ceiling, blind to other processes. On lavapipe the heap is system RAM
//     and allocation is lazy, so this is the only honest number there.
//  3. Our own accounting: the bytes of every buffer the device holds
//     (pooled free buffers included — they are still allocated), summed on
//     the device thread. Pooled buffers are only destroyed by TrimPool, so
//     between trims the held bytes never go down: their value after a run
//     is the run's peak, which is what the capability bench records.
//
// The budget knob (Backend.SetVRAMBudget, or ZENMETRICS_VRAM_BUDGET_MIB in
// the environment) caps the bytes the backend lets itself hold, so strips
// can be forced on a large GPU: Estimate refuses full images above it and
// the strip planner sizes bands to it.

// EnvVRAMBudget names the environment variable with a VRAM budget in MiB.
const EnvVRAMBudget = "ZENMETRICS_VRAM_BUDGET_MIB"

// vramHeadroom is the share of free memory one task may plan to use (the
// orchestrator's chooser uses the same factor).
const vramHeadroom = 0.85

// MemoryInfo is one reading of the device's memory.
type MemoryInfo struct {
	// Held is the bytes of every buffer this device holds (our accounting).
	Held int64
	// PoolFree is the part of Held sitting free in the buffer pool.
	PoolFree int64
	// Free and Total are the device's free and total memory, -1 if unknown.
	Free, Total int64
	// Source says where Free comes from: "nvml", "heap", "heap+sysmem"
	// (a shared-memory adapter: see heapFree) or "none".
	Source string
}

// heldBytes sums the live buffers (device thread only).
func (g *GPU) heldBytes() int64 {
	var n int64
	for b := range g.live {
		n += int64(b.size)
	}
	return n
}

// devStats is per-device accounting kept outside Device (a package-level
// map keyed by the device) so the device layer stays as it is.
type devStats struct {
	held atomic.Int64 // last summed held bytes
	pool atomic.Int64 // of which free in the pool
	peak atomic.Int64 // largest held bytes since the last ResetPeak

	nvOnce sync.Once
	nv     *nvml.Device // nil: no NVML for this adapter
}

var statsMap sync.Map // *Device → *devStats

func stats(d *Device) *devStats {
	if s, ok := statsMap.Load(d); ok {
		return s.(*devStats)
	}
	s, _ := statsMap.LoadOrStore(d, &devStats{})
	return s.(*devStats)
}

// noteHeld updates the held/peak accounting (device thread only). Every
// metric calls it at the end of the closures that allocate.
func (g *GPU) noteHeld() int64 {
	n := g.heldBytes()
	s := stats(g.d)
	s.held.Store(n)
	s.pool.Store(g.PoolBytes())
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return n
}

var nvmlLib struct {
	once sync.Once
	lib  *nvml.Lib
}

// nvmlDevice is the NVML device of d's adapter, or nil.
func (d *Device) nvmlDevice() *nvml.Device {
	s := stats(d)
	s.nvOnce.Do(func() {
		if d.info.VendorID != 0x10de { // NVIDIA's PCI vendor id
			return
		}
		nvmlLib.once.Do(func() {
			if lib, err := nvml.Open(); err == nil {
				nvmlLib.lib = lib
			}
		})
		lib := nvmlLib.lib
		if lib == nil {
			return
		}
		n, err := lib.DeviceCount()
		if err != nil {
			return
		}
		want := strings.TrimSpace(d.info.Name())
		for i := range n {
			nd, err := lib.Device(i)
			if err != nil {
				continue
			}
			if name, err := nd.Name(); err == nil && strings.EqualFold(strings.TrimSpace(name), want) {
				s.nv = nd
				return
			}
		}
	})
	return s.nv
}

// heapBytes is the largest device-local heap the adapter reports (0: none).
func (d *Device) heapBytes() int64 {
	var best uint64
	for _, h := range d.info.Heaps {
		if h.Properties&wgpu.HeapPropertyDeviceLocal != 0 && h.Size > best {
			best = h.Size
		}
	}
	return int64(best)
}

// Memory reads the device's memory now: our held bytes (summed on the
// device thread, so it waits for the running closure), and free/total from
// NVML or the heap.
func (d *Device) Memory(ctx context.Context) (MemoryInfo, error) {
	mi := MemoryInfo{Free: -1, Total: -1, Source: "none"}
	err := d.Do(ctx, func(g *GPU) error {
		mi.Held = g.noteHeld()
		mi.PoolFree = g.PoolBytes()
		return nil
	})
	if err != nil {
		return mi, err
	}
	d.fillFree(&mi)
	return mi, nil
}

// fillFree sets Free/Total/Source from NVML or the heap, given mi.Held.
func (d *Device) fillFree(mi *MemoryInfo) {
	if nd := d.nvmlDevice(); nd != nil {
		if m, err := nd.Memory(); err == nil {
			mi.Free, mi.Total, mi.Source = int64(m.Free), int64(m.Total), "nvml"
			return
		}
	}
	if h := d.heapBytes(); h > 0 {
		mi.Free, mi.Total, mi.Source = heapFree(h, mi.Held, d.info.Type, sysmem.Available)
	}
}

// heapFree turns the adapter's heap size into free/total bytes. For a
// discrete GPU the heap is its own memory: heap − held. An integrated GPU
// (a laptop's, Apple's unified memory) or a software adapter (lavapipe)
// reports system RAM as its heap, shared with the CPU workers, every other
// process and the OS; heap − held would promise memory that is in use, so
// Free is also capped by what the OS says is available right now, read at
// each call rather than assumed (Source "heap+sysmem"). sysAvail is
// internal/sysmem.Available; it returns 0 when the OS gives no number, and
// then only the heap bound is used.
func heapFree(heap, held int64, t wgpu.AdapterType, sysAvail func() int64) (free, total int64, source string) {
	free, total, source = max(0, heap-held), heap, "heap"
	if t != wgpu.AdapterTypeIntegratedGPU && t != wgpu.AdapterTypeCPU {
		return free, total, source
	}
	if a := sysAvail(); a > 0 {
		// Our own held buffers are already out of the OS's available
		// memory on a shared-memory adapter, so the cap is that number as it is.
		free, source = min(free, a), "heap+sysmem"
	}
	return free, total, source
}

// nvmlUsed is NVML's used bytes for the adapter (false: no NVML).
func (d *Device) nvmlUsed() (int64, bool) {
	nd := d.nvmlDevice()
	if nd == nil {
		return 0, false
	}
	m, err := nd.Memory()
	if err != nil {
		return 0, false
	}
	return int64(m.Used), true
}

// envBudget reads ZENMETRICS_VRAM_BUDGET_MIB (0: unset or invalid).
func envBudget() int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(os.Getenv(EnvVRAMBudget)), 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v << 20
}

// vramMeter measures one run: our held-bytes peak (reset at the start)
// and, with NVML, the largest rise of the GPU's used memory, sampled at
// an interval by a goroutine while the run lasts.
type vramMeter struct {
	d        *Device
	base     int64 // held bytes at the start
	nvBase   int64
	nvPeak   atomic.Int64
	hasNV    bool
	stop     chan struct{}
	done     chan struct{}
	interval time.Duration
}

// startMeter trims the pool (so the run's allocations are its own), resets
// the peak and starts NVML sampling at interval (0: 1 ms).
func startMeter(ctx context.Context, d *Device, interval time.Duration) (*vramMeter, error) {
	if interval <= 0 {
		interval = time.Millisecond
	}
	m := &vramMeter{d: d, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	err := d.Do(ctx, func(g *GPU) error {
		g.TrimPool()
		m.base = g.heldBytes()
		stats(d).peak.Store(m.base)
		stats(d).held.Store(m.base)
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.nvBase, m.hasNV = d.nvmlUsed()
	m.nvPeak.Store(m.nvBase)
	go func() {
		defer close(m.done)
		if !m.hasNV {
			return
		}
		t := time.NewTicker(m.interval)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				if u, ok := d.nvmlUsed(); ok && u > m.nvPeak.Load() {
					m.nvPeak.Store(u)
				}
			}
		}
	}()
	return m, nil
}

// finish stops sampling and returns the peak of our accounting above the
// start, and the NVML used-delta (-1 without NVML).
func (m *vramMeter) finish(ctx context.Context) (ours, nvDelta int64, err error) {
	if u, ok := m.d.nvmlUsed(); ok && u > m.nvPeak.Load() {
		m.nvPeak.Store(u)
	}
	close(m.stop)
	<-m.done
	err = m.d.Do(ctx, func(g *GPU) error {
		g.noteHeld()
		return nil
	})
	ours = stats(m.d).peak.Load() - m.base
	nvDelta = -1
	if m.hasNV {
		nvDelta = m.nvPeak.Load() - m.nvBase
	}
	return ours, nvDelta, err
}

// MeasureMemory implements capability.MemoryMeter: it trims the device's
// buffer pool (so what fn allocates is its own), runs fn, and returns the
// peak of our accounting above the start and NVML's used-memory rise
// (sampled every millisecond while fn runs; -1 without NVML). Buffers fn
// leaves in the pool count: they were held at the peak. Other work on the
// device while fn runs is counted too; run it alone.
func (b *Backend) MeasureMemory(ctx context.Context, fn func() error) (peak, deviceDelta int64, err error) {
	m, err := startMeter(ctx, b.dev, 0)
	if err != nil {
		return 0, -1, err
	}
	fnErr := fn()
	peak, deviceDelta, err = m.finish(ctx)
	if fnErr != nil {
		return peak, deviceDelta, fnErr
	}
	return peak, deviceDelta, err
}
