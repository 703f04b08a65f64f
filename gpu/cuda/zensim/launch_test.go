package zensim

import (
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
)

// newFake is the fake allocator with the device's rounding.
func newFake() *cudaemu.FakeAlloc { return &cudaemu.FakeAlloc{Round: roundAlloc} }

// fakeRef allocates a reference's buffers (the tables, one per scale)
// with fa, in prepare's order.
func fakeRef(fa *cudaemu.FakeAlloc, dims [][2]int) (tab *cuda.Buffer, ref []*cuda.Buffer) {
	sizes := refSizes(dims)
	tab = fa.Alloc(sizes[0])
	for s := range dims {
		ref = append(ref, fa.Alloc(sizes[1+s]))
	}
	return tab, ref
}
