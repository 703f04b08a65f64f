package cuda

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"unsafe"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// Page-locked images. An upload from ordinary Go memory goes through a
// worker's staging chunks: the CPU copies each chunk into page-locked
// memory, then the DMA engine moves it (about 20 GB/s on the H200 for a
// 16 MP image, 10 GB/s for 1 MP). An image whose pixels already sit in
// page-locked memory needs neither the copy nor the staging: the DMA
// engine reads it in place, at the bus's speed (37–40 GB/s measured
// there). PinnedImage hands out such images; Worker.Upload recognises
// them by address and copies straight from them. This is also how
// other GPU tools feed their kernels (Vship's harnesses use its
// page-locked allocator), so it is the fair setting for side-by-side
// timings.

// pinnedRange is one page-locked allocation handed out by PinnedImage.
type pinnedRange struct {
	start, end uintptr
	p          unsafe.Pointer
}

var (
	pinnedMu sync.RWMutex
	pinned   []pinnedRange // sorted by start, disjoint
)

func registerPinned(p unsafe.Pointer, size int64) {
	r := pinnedRange{start: uintptr(p), end: uintptr(p) + uintptr(size), p: p}
	pinnedMu.Lock()
	defer pinnedMu.Unlock()
	i, _ := slices.BinarySearchFunc(pinned, r.start, func(e pinnedRange, s uintptr) int {
		switch {
		case e.start < s:
			return -1
		case e.start > s:
			return 1
		}
		return 0
	})
	pinned = slices.Insert(pinned, i, r)
}

func unregisterPinned(p unsafe.Pointer) {
	pinnedMu.Lock()
	defer pinnedMu.Unlock()
	pinned = slices.DeleteFunc(pinned, func(e pinnedRange) bool { return e.p == p })
}

// pinnedPtr returns the address of src's first byte when all of src lies
// inside one registered page-locked allocation.
func pinnedPtr(src []byte) (unsafe.Pointer, bool) {
	if len(src) == 0 {
		return nil, false
	}
	a := uintptr(unsafe.Pointer(unsafe.SliceData(src)))
	b := a + uintptr(len(src))
	pinnedMu.RLock()
	defer pinnedMu.RUnlock()
	// The last range starting at or before a.
	i := sort.Search(len(pinned), func(k int) bool { return pinned[k].start > a }) - 1
	if i < 0 || b > pinned[i].end || a < pinned[i].start {
		return nil, false
	}
	return unsafe.Add(pinned[i].p, a-pinned[i].start), true
}

// PinnedImage allocates a w×h image of format f whose pixels are
// page-locked host memory (portable: every device's uploads read it in
// place), for a caller that fills images itself and scores them on CUDA:
// decode or convert into its Pix, score it, reuse it for the next image.
// release frees the memory; the image must not be used (nor be being
// scored) after it. Page-locked memory is taken out of the OS's pageable
// pool, so keep a few such images and reuse them rather than making one
// per score.
func (b *Backend) PinnedImage(w, h int, f zenmetrics.PixelFormat) (im *zenmetrics.Image, release func(), err error) {
	if w <= 0 || h <= 0 || f.Channels() == 0 {
		return nil, nil, fmt.Errorf("%w: cuda: pinned image %dx%d of format %v", zenmetrics.ErrBadInput, w, h, f)
	}
	stride := int64(w) * int64(f.BytesPerPixel())
	size := stride * int64(h)
	if stride > int64(^uint32(0)>>1) || size/int64(h) != stride {
		return nil, nil, fmt.Errorf("%w: cuda: pinned image %dx%d too large", zenmetrics.ErrBadInput, w, h)
	}
	hb, err := b.dev.HostAlloc(size)
	if err != nil {
		return nil, nil, err
	}
	registerPinned(hb.p, size)
	im = &zenmetrics.Image{Width: w, Height: h, Stride: int(stride), Format: f, Pix: hb.Bytes[:size:size]}
	var once sync.Once
	return im, func() {
		once.Do(func() {
			unregisterPinned(hb.p)
			b.dev.FreeHost(hb)
		})
	}, nil
}

// uploadPtr queues a copy of n bytes from page-locked host memory at p to
// dst at dstOff (p must stay untouched until the stream passes this point).
func (s *Stream) uploadPtr(dst *Buffer, dstOff int64, p unsafe.Pointer, n int64) error {
	if n <= 0 {
		return nil
	}
	if dstOff < 0 || dstOff+n > dst.Size {
		return fmt.Errorf("%w: cuda: upload of %d bytes out of range", zenmetrics.ErrBadInput, n)
	}
	return s.d.call(func() error {
		return s.d.api.check("cuMemcpyHtoDAsync_v2", s.d.api.memcpyHtoDAsync(dst.Ptr+DevPtr(dstOff), p, uint64(n), s.h))
	})
}
