package cvvdp

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// TestPlanJOD: the exported pooling, fed each band's row sums added in
// row order in float64 (what an accelerator reads back and adds), gives
// Score's JOD bit for bit, on two displays (HDR PQ included) and two
// sizes; and Plan's layout and CSF rows are the reference's.
func TestPlanJOD(t *testing.T) {
	for _, c := range []struct {
		w, h int
		disp string
	}{{97, 61, ""}, {200, 130, "standard_hdr_pq"}} {
		ref := synth(c.w, c.h, zenmetrics.RGB8, 1)
		dist := synth(c.w, c.h, zenmetrics.RGB8, 2)
		r, err := Prepare(ref, Config{Display: c.disp, Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		want, err := r.Score(dist)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(c.w, c.h, c.disp)
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < p.Levels; b++ {
			if p.HeatW[b] != r.heatWeights(b) {
				t.Errorf("band %d: plan heat weights %v, reference %v", b, p.HeatW[b], r.heatWeights(b))
			}
		}
		k := KernelConstants()
		if met2jod(0.05) != 10-k.JodLin*0.05 || met2jod(3) != 10-k.JodA*pow32(3, k.JodExp) {
			t.Errorf("met2jod constants: JodLin %v, JodA %v, JodExp %v", k.JodLin, k.JodA, k.JodExp)
		}
		if p.Levels != r.lay.n || p.PPD != r.ppd {
			t.Fatalf("plan: %d levels at %v ppd, reference %d at %v", p.Levels, p.PPD, r.lay.n, r.ppd)
		}
		sc := newScratch(&r.lay, 1, false)
		r.frameToPyramid(dist, sc)
		sums := make([][nCh]float64, p.Levels)
		for b := 0; b < p.Levels; b++ {
			if p.W[b] != r.lay.w[b] || p.H[b] != r.lay.h[b] || p.Mul[b] != r.lay.bandMul(b) {
				t.Fatalf("band %d: plan %dx%d ×%v, reference %dx%d ×%v", b, p.W[b], p.H[b], p.Mul[b], r.lay.w[b], r.lay.h[b], r.lay.bandMul(b))
			}
			if b == p.Levels-1 {
				r.scoreBaseBand(b, sc)
			} else {
				r.scoreBand(b, sc)
			}
			for y := 0; y < p.H[b]; y++ {
				for ch := 0; ch < nCh; ch++ {
					sums[b][ch] += sc.acc[nCh*y+ch]
				}
			}
		}
		got := p.JOD(sums)
		t.Logf("%dx%d %q: %d levels, Plan.JOD %.9f, Score %.9f", c.w, c.h, c.disp, p.Levels, got, want)
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%dx%d %q: Plan.JOD %v, Score %v", c.w, c.h, c.disp, got, want)
		}
		r.Release()
	}
	if _, err := NewPlan(1, 5, ""); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("NewPlan 1×5: err = %v, want ErrBadInput", err)
	}
	if _, err := NewPlan(8, 8, "nope"); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("NewPlan with an unknown display: err = %v, want ErrBadInput", err)
	}
}

// TestPlanHeatmap: Plan.Heatmap on the bands' map values gives Score's
// distortion map bit for bit.
func TestPlanHeatmap(t *testing.T) {
	ref := synth(83, 59, zenmetrics.RGB8, 3)
	dist := synth(83, 59, zenmetrics.RGB8, 4)
	r, err := Prepare(ref, Config{DistMap: true, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	res, err := r.ScoreContext(context.Background(), dist)
	if err != nil {
		t.Fatal(err)
	}
	sc := newScratch(&r.lay, 2, true)
	r.frameToPyramid(dist, sc)
	if _, err := r.scoreFrame(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(83, 59, "")
	if err != nil {
		t.Fatal(err)
	}
	got := p.Heatmap(sc.heat, 2)
	if len(got) != len(res.DistMap.Pix) {
		t.Fatalf("%d values, map %d", len(got), len(res.DistMap.Pix))
	}
	for k, v := range got {
		if math.Float32bits(v) != math.Float32bits(res.DistMap.Pix[k]) {
			t.Fatalf("pixel %d: Plan.Heatmap %v, Score %v", k, v, res.DistMap.Pix[k])
		}
	}
}
