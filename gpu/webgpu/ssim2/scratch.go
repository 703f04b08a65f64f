package ssim2

import (
	"unsafe"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// The scoring scratch and the layout of its partial sums.

// ssim2Sums is the layout of the partials buffer: first the per-workgroup
// sums vmaps writes (passes one after another, in each the scales, in
// each the channels, in each the six terms of count[s] slots: one per
// workgroup across × row band), then, for strips, the recursion state
// carried from strip to strip (6 floats per column and quantity of every
// pass, scale and channel), then the band-start states vstate leaves for
// vmaps' row bands (6 floats per column and quantity of each band after
// the first, for every scale and channel, as one dispatch runs them all;
// the passes run one after another, so they reuse it).
type ssim2Sums struct {
	count    []uint32 // per scale: slots per term
	bands    []int    // per scale: row bands (1: none)
	bandRows int      // rows per band (0: bands off)
	perPass  uint32
	carry    uint32      // offset of the carried strip state (0: none)
	bandAt   uint32      // offset of the band-start states
	bandOff  [][3]uint32 // per scale and channel: its states, after bandAt
	total    uint32      // floats
}

// newSSIM2Sums lays out the partials of plan for vmaps workgroups of vx
// columns; bands of bandRows rows (0: none) apply to whole images only
// (carry, i.e. strips, turns them off: a strip already resumes from a
// carried state and is short).
func newSSIM2Sums(plan []ssim2Scale, passes, vx, bandRows int, carry bool) ssim2Sums {
	if carry {
		bandRows = 0
	}
	l := ssim2Sums{bandRows: bandRows, bandOff: make([][3]uint32, len(plan))}
	var bandFloats uint32
	for s, sc := range plan {
		nb := 1
		if bandRows > 0 {
			nb = (sc.H + bandRows - 1) / bandRows
		}
		nwx := (sc.W + vx - 1) / vx
		l.bands = append(l.bands, nb)
		l.count = append(l.count, uint32(nwx*nb))
		l.perPass += uint32(nwx*nb) * 3 * ssim2Terms
		for c := 0; c < 3; c++ {
			l.bandOff[s][c] = bandFloats
			bandFloats += uint32((nb - 1) * 6 * ssim2VSlots * sc.W)
		}
	}
	l.total = l.perPass * uint32(passes)
	if carry {
		l.carry = l.total
		l.total += ssim2CarryFloats(plan) * uint32(passes)
	}
	l.bandAt = l.total
	l.total += bandFloats
	return l
}

// ssim2CarryFloats is the carried strip state of one pass: 6 floats per
// column and quantity of every scale and channel.
func ssim2CarryFloats(plan []ssim2Scale) uint32 {
	var n uint32
	for _, sc := range plan {
		n += uint32(sc.W) * ssim2VSlots * 3 * 6
	}
	return n
}

// base is the first slot of pass pi, scale s, channel c.
func (l *ssim2Sums) base(pi, s, c int) uint32 {
	b := uint32(pi) * l.perPass
	for i := 0; i < s; i++ {
		b += l.count[i] * 3 * ssim2Terms
	}
	return b + uint32(c)*ssim2Terms*l.count[s]
}

// carryBase is where the carried state of pass pi, scale s, channel c
// starts (strips only).
func (l *ssim2Sums) carryBase(plan []ssim2Scale, pi, s, c int) uint32 {
	b := l.carry + uint32(pi)*ssim2CarryFloats(plan)
	for i := 0; i < s; i++ {
		b += uint32(plan[i].W) * ssim2VSlots * 3 * 6
	}
	return b + uint32(c)*6*ssim2VSlots*uint32(plan[s].W)
}

// vmapsParams is the vmaps/vstate block of pass pi, scale s, channel c
// summing rows win (carry: a strip's).
func (l *ssim2Sums) vmapsParams(plan []ssim2Scale, pi, s, c int, win [2]int) *ssim2Params {
	sc := plan[s]
	p := &ssim2Params{Width: uint32(sc.W), Height: uint32(sc.H),
		WinLo: uint32(win[0]), WinHi: uint32(win[1]),
		PartialBase: l.base(pi, s, c), PartialCount: l.count[s], BandBase: l.bandAt + l.bandOff[s][c]}
	if l.bands[s] > 1 {
		p.BandRows = uint32(l.bandRows)
	}
	if l.carry != 0 {
		p.Carry = l.carryBase(plan, pi, s, c)
	}
	return p
}

// newSSIM2Scratch takes the scratch for plan and passes from the pool and
// writes its constant buffers; with carry (strips) partials has room for
// the recursion state after the column sums, as much again. On error the
// partial scratch is returned too, for the caller to free.
func newSSIM2Scratch(g *webgpu.GPU, plan []ssim2Scale, passes int, carry bool, k *ssim2Kernels) (*ssim2Scratch, error) {
	sc := &ssim2Scratch{plan: plan, lay: newSSIM2Sums(plan, passes, k.vx, k.band, carry)}
	t := &sc.held
	lim := g.Limits()
	nb := ssim2PyrBuffers(plan, min(lim.MaxStorageBufferBindingSize, lim.MaxBufferSize))
	if forcePyrBuffers != 0 {
		nb = forcePyrBuffers
	}
	sc.pyr = newSSIM2Pyr(plan, nb)
	sc.xyb = sc.pyr.take(g, t)
	for i := range sc.hb {
		sc.hb[i] = sc.pyr.take(g, t)
	}
	sc.coef = t.Uniform(g, int64(unsafe.Sizeof(ssim2Coef{})))
	if t.Err == nil {
		coef := []ssim2Coef{ssim2IIRCoef()}
		webgpu.WriteSlice(g, sc.coef, 0, coef)
	}
	sc.lin = make([][3]*webgpu.Buffer, len(plan))
	for s, p := range plan {
		sc.lin[s] = t.Planes3(g, int64(p.W)*int64(p.H))
	}
	sc.carry = sc.lay.carry
	sc.partials = t.Storage(g, 4*int64(sc.lay.total))
	var terms []ssim2Term
	for pi := 0; pi < passes; pi++ {
		for s := range plan {
			count := sc.lay.count[s]
			for c := 0; c < 3; c++ {
				cb := sc.lay.base(pi, s, c)
				for q := uint32(0); q < ssim2Terms; q++ {
					terms = append(terms, ssim2Term{Base: cb + q*count, Count: count})
				}
			}
		}
	}
	sc.nTerms = len(terms)
	sc.terms = t.Storage(g, int64(len(terms))*16)
	sc.sums = t.Storage(g, int64(len(terms))*8)
	if t.Err != nil {
		return sc, t.Err
	}
	webgpu.WriteSlice(g, sc.terms, 0, terms)
	sc.sumsHost = make([]float32, 2*sc.nTerms)
	return sc, nil
}

// fits reports whether the scratch serves a reference with this plan and
// number of passes.
func (sc *ssim2Scratch) fits(plan []ssim2Scale, passes int) bool {
	if len(sc.plan) != len(plan) || sc.nTerms != passes*len(plan)*3*ssim2Terms {
		return false
	}
	for s, p := range plan {
		if p.W != sc.plan[s].W || p.H > sc.plan[s].H {
			return false
		}
	}
	return true
}

// forcePyrBuffers, when not 0, sets the buffers per pyramid (1 or 3)
// instead of the binding limit's choice: tests check that both layouts
// give the same bits.
var forcePyrBuffers int
