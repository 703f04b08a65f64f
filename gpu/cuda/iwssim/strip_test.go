package iwssim

import (
	"errors"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuiw "github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// stripCases are the geometries the strip tests run: the smallest band
// (one alignment, every crop mostly halo), bands of about a halo, uneven
// ones, a last band shorter than the others, heights that are no multiple
// of anything (odd at every scale), the 161-row minimum (one strip) and a
// band as tall as the image.
var stripCases = []struct{ w, h, band int }{
	{161, 300, 16}, {200, 411, 96}, {170, 333, 112}, {161, 561, 160}, {163, 1001, 64}, {161, 161, 16}, {180, 200, 400}, {171, 517, 48},
}

// The owned rows tile the image: at every scale each covariance block
// row (centres 1..h−2) and each region row (centres 5..h−6) is computed
// by exactly one band, crops start on the alignment, and every owned
// centre keeps the halo's reach of crop context on either side (or sits
// at the image's own edge there): 12 rows at a band's scale (7 the
// reflection may corrupt, 5 the window reads), 8 at the low-pass scale
// 4. What strip.go's bit-exactness argument rests on.
func TestStripGeometry(t *testing.T) {
	for _, c := range append(stripCases, struct{ w, h, band int }{1000, 4099, 256}, struct{ w, h, band int }{161, 177, 16}) {
		p, err := planStrips(c.w, c.h, func(int) int64 { return 0 }, -1, c.band)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		for k := 0; k < nScales; k++ {
			blocks, regions := map[int]int{}, map[int]int{}
			for i, b := range p.bands {
				if b.C0%stripAlign != 0 || b.gm.w != c.w || b.ro[k] != b.C0>>k || (b.Rows() < stripMin && b.Rows() < c.h) {
					t.Fatalf("%+v band %d: crop %+v", c, i, b.Strip)
				}
				if b.C1 == c.h && b.ro[k]+b.gm.s[k].h != p.gm.s[k].h {
					t.Errorf("%+v scale %d: the last crop ends at row %d, the image at %d", c, k, b.ro[k]+b.gm.s[k].h, p.gm.s[k].h)
				}
				reach := 12
				if k == nScales-1 {
					reach = 8
				}
				lo, hi := b.owned(k, 1)
				for r := lo; r < hi; r++ {
					blocks[r+b.ro[k]-1]++
				}
				i0, n := b.regions(k)
				for j := i0; j < i0+n; j++ {
					regions[j+b.ro[k]]++
				}
				if n > 0 && ((b.C0 > 0 && i0+gaussRad < reach) || (b.C1 < c.h && b.gm.s[k].h-(i0+n-1+gaussRad)-1 < reach)) {
					t.Errorf("%+v scale %d band %d: region centres [%d, %d) of %d rows leave less than %d rows of context", c, k, i, i0+gaussRad, i0+n+gaussRad, b.gm.s[k].h, reach)
				}
			}
			s := p.gm.s[k]
			for r := 0; r < s.h-2; r++ {
				if blocks[r] != 1 {
					t.Fatalf("%+v scale %d: block row %d computed %d times", c, k, r, blocks[r])
				}
			}
			for r := 0; r < s.rh; r++ {
				if regions[r] != 1 {
					t.Fatalf("%+v scale %d: region row %d computed %d times", c, k, r, regions[r])
				}
			}
			if len(blocks) != s.h-2 || len(regions) != s.rh {
				t.Errorf("%+v scale %d: %d block rows, %d region rows", c, k, len(blocks), len(regions))
			}
		}
	}
}

// The halo, checked on the CPU reference's own float64 pipeline (the
// operations the kernels do): cpu/iwssim prepared on a band's crop gives
// the whole image's bands at every row an owned value reads (the owned
// centres ± 5) and the whole image's mu, vr, bm, bv at every owned region
// row, bit for bit. (Its vᵀC⁻¹v differs: the model is the crop's and the
// parent's enlargement the crop's, which is why the kernels interpolate
// at the image's rows with the image's model.)
func TestStripHalo(t *testing.T) {
	for i, c := range stripCases {
		if c.h < stripMin || (testing.Short() && i > 2) {
			continue
		}
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(40+i), zenmetrics.RGB8)
		whole, err := cpuiw.Prepare(ref, cpuiw.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ws := whole.Scales()
		p, err := planStrips(c.w, c.h, func(int) int64 { return 0 }, -1, c.band)
		if err != nil {
			t.Fatal(err)
		}
		for bi, b := range p.bands {
			cr, err := cpuiw.Prepare(strips.Crop(ref, b.C0, b.C1), cpuiw.Config{})
			if err != nil {
				t.Fatal(err)
			}
			cs := cr.Scales()
			for k := 0; k < nScales; k++ {
				name := fmt.Sprintf("%dx%d band %d crop [%d,%d) scale %d", c.w, c.h, bi, b.C0, b.C1, k)
				ro, w := b.ro[k], cs[k].W
				i0, n := b.regions(k)
				lo, hi := b.owned(k, 1)
				if n > 0 {
					lo, hi = min(lo, i0), max(hi, i0+n+2*gaussRad)
				}
				lo, hi = max(lo-1, 0), min(hi+1, cs[k].H)
				if !sameBits(cs[k].Y[lo*w:hi*w], ws[k].Y[(lo+ro)*w:(hi+ro)*w]) {
					t.Errorf("%s: band rows [%d, %d) differ from the image's", name, lo+ro, hi+ro)
				}
				rw := cs[k].RW
				planes := [][2][]float64{{cs[k].Mu, ws[k].Mu}, {cs[k].Vr, ws[k].Vr}}
				if weighted(k) {
					planes = append(planes, [2][]float64{cs[k].Bm, ws[k].Bm}, [2][]float64{cs[k].Bv, ws[k].Bv})
				}
				for m, pl := range planes {
					if n > 0 && !sameBits(pl[0][i0*rw:(i0+n)*rw], pl[1][(i0+ro)*rw:(i0+n+ro)*rw]) {
						t.Errorf("%s: statistic %d differs at the owned region rows", name, m)
					}
				}
			}
			cr.Release()
		}
		whole.Release()
	}
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// The plan follows the budget: everything fits → one band with the
// reference kept; less → more bands, each plan within the budget; the
// slot and reference buffer lists are exactly the modelled memory (less
// the preparation's covariance table); a budget below any plan is an
// OutOfMemoryError, and Estimate declines it.
func TestStripBudget(t *testing.T) {
	w, h := 1500, 3000
	rawOf := func(rows int) int64 { return worstRaw(w, rows) }
	full := newStripPlan(w, h, []strips.Strip{{Y0: 0, Y1: h, C0: 0, C1: h}}, true).memory(worstRaw(w, h))
	if whole := estimate(w, h, worstRaw(w, h)); full < whole || full > whole+whole/10 {
		t.Errorf("one band: %d bytes, the whole image %d", full, whole)
	}
	plan := func(budget int64) (cudatest.BudgetPlan, error) {
		p, err := planStrips(w, h, rawOf, budget, 0)
		if err != nil {
			return cudatest.BudgetPlan{}, err
		}
		fa := cudatest.NewFake()
		sr, _ := fakeStrips(fa, p, rawOf(p.rows))
		if len(fa.Bufs) != len(p.refSizes())+len(p.slotSizes(1)) || sr.model == nil {
			t.Errorf("budget %d: %d buffers, the model %d (model buffer %v)", budget, len(fa.Bufs), len(p.refSizes())+len(p.slotSizes(1)), sr.model)
		}
		// The preparation's covariance table is in the model, not a buffer
		// of the reference or the slot.
		held := cudatest.Held(fa) + cuda.AllocSize(p.covBytes())
		return cudatest.BudgetPlan{Bands: len(p.bands), Rows: p.rows, Keep: p.keep, Memory: p.memory(rawOf(p.rows)), Held: held}, nil
	}
	cudatest.StripOneBand(t, full, plan)
	cudatest.StripBudgets(t, full, []float64{0.9, 0.6, 0.4, 0.25, 0.15}, plan)
	if _, err := planStrips(w, h, rawOf, 1<<20, 0); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("a 1 MiB budget: %v, want ErrOutOfMemory", err)
	}
	cudatest.StripEstimates(t, func(budget int64) (int64, bool) { return estimateStrips(w, h, budget) }, full/4)
	// Beyond the kernels' indexing (the image's tables, or no crop fits
	// the int planes): refused whatever the budget.
	if _, err := planStrips(200, 40_000_000, func(int) int64 { return 0 }, -1, 1000); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("40M rows: %v, want ErrOutOfMemory", err)
	}
}

// fakeStrips allocates a strip reference's and slot's buffers with fa.
func fakeStrips(fa *cudaemu.FakeAlloc, p *stripPlan, raw int64) (*stripRun, *stripSlot) {
	sr := &stripRun{k: newKernels(), p: p}
	sizes := p.refSizes()
	next := func() *cuda.Buffer { n := sizes[0]; sizes = sizes[1:]; return fa.Alloc(n) }
	sr.model = next()
	if p.keep {
		sr.kept = make([]refPlanes, len(p.bands))
		for i := range sr.kept {
			fillCrop(&sr.kept[i], next)
			sr.kept[i].model = sr.model
		}
	}
	s := &stripSlot{}
	fillStripSlot(s, p, raw, fa.Alloc)
	return sr, s
}

// setKeep sets forceKeep (nil: the plan chooses), as cudatest.EachKeep and
// StripsKeptAndRecomputed ask.
func setKeep(k *bool) { forceKeep = k }
