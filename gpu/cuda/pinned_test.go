package cuda

import (
	"testing"
	"unsafe"
)

// The registry without a device: a slice is direct only when all of it
// lies inside one registered allocation, at the matching offset; two
// neighbouring allocations do not make one range; unregistering ends it.
func TestPinnedRegistry(t *testing.T) {
	mem := make([]byte, 4096)
	a, b := mem[:1024], mem[2048:3072] // two "allocations" with a gap
	registerPinned(unsafe.Pointer(&a[0]), int64(len(a)))
	registerPinned(unsafe.Pointer(&b[0]), int64(len(b)))
	defer unregisterPinned(unsafe.Pointer(&a[0]))
	defer unregisterPinned(unsafe.Pointer(&b[0]))
	cases := []struct {
		name string
		src  []byte
		want bool
	}{
		{"all of a", a, true},
		{"inside a", a[100:900], true},
		{"end of b", b[1000:], true},
		{"empty", a[:0], false},
		{"past a's end", mem[1000:1100], false},
		{"the gap", mem[1500:1600], false},
		{"a to b", mem[0:3072], false},
		{"ordinary memory", make([]byte, 64), false},
	}
	for _, c := range cases {
		p, ok := pinnedPtr(c.src)
		if ok != c.want {
			t.Errorf("%s: direct %v, want %v", c.name, ok, c.want)
			continue
		}
		if ok && p != unsafe.Pointer(&c.src[0]) {
			t.Errorf("%s: pointer %p, want %p", c.name, p, &c.src[0])
		}
	}
	unregisterPinned(unsafe.Pointer(&b[0]))
	if _, ok := pinnedPtr(b); ok {
		t.Error("b still direct after unregistering")
	}
	if _, ok := pinnedPtr(a[10:20]); !ok {
		t.Error("a lost with b")
	}
}
