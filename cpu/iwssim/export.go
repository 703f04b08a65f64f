package iwssim

// What a prepared reference holds, for backends that score the distorted
// side themselves (gpu/webgpu/iwssim prepares the reference here, in
// float64, and uploads it).

// ScaleData is a read-only view of one scale of a prepared reference.
// Region maps are RW×RH (centres (5+i, 5+j) of the W×H band).
type ScaleData struct {
	W, H, RW, RH int
	// Y is the band (the low-pass image at the last scale), W×H.
	Y []float64
	// Mu and Vr are the Gaussian mean and relu'd variance of Y on the
	// region.
	Mu, Vr []float64
	// Bm, Bv and SS (scales 0–3; nil at the last) are the 3×3 mean, relu'd
	// variance and vᵀC⁻¹v/N on the region; LamScaled is λ_k/sigma_nsq².
	Bm, Bv, SS []float64
	LamScaled  []float64
	// Flat (scales 0–3) is set when the band is rounding noise, treated
	// as zero: its model, SS and LamScaled, is exactly zero, and a
	// distorted image that is flat there too gets no weight at all (see
	// the package documentation, "Flat and degenerate images").
	Flat bool
}

// Scales returns the five scales' data; the slices are the reference's
// own and must not be modified. Nil after Release.
func (r *Reference) Scales() []ScaleData {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.released {
		return nil
	}
	out := make([]ScaleData, numScales)
	for k := range r.scales {
		s := &r.scales[k]
		out[k] = ScaleData{W: s.w, H: s.h, RW: s.rw, RH: s.rh, Y: s.y, Mu: s.mu, Vr: s.vr,
			Bm: s.bm, Bv: s.bv, SS: s.ss, LamScaled: s.lamScaled, Flat: s.flat}
	}
	return out
}

// Kernel constants as the CPU reference uses them (float64; see params.go
// for their sources).
type Constants struct {
	Pyr      [5]float64  // binomial5 × √2
	Gauss    [11]float64 // 1-D Gaussian factor
	Box      float64     // 1/9
	C1, C2   float64
	SigmaNsq float64
	InvNsq2  float64 // 1 / sigma_nsq²
	Eps      float64 // float64 machine epsilon (piq's mask threshold)
	Weights  [numScales]float64
}

// KernelConstants returns the constants.
func KernelConstants() Constants {
	return Constants{Pyr: cst.pyr, Gauss: cst.gauss, Box: cst.box, C1: cst.c1, C2: cst.c2,
		SigmaNsq: sigmaNsq, InvNsq2: 1 / cst.nsq2, Eps: eps, Weights: cst.weights}
}

// NumScales is the number of scales (piq's default: 5).
const NumScales = numScales
