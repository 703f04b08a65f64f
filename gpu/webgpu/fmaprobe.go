package webgpu

// ProbeFMA runs an FMA probe module (src, compiled as name): entry point
// "probe" over one storage buffer of eight f32 that reads a, b and c from
// elements 0–2 and writes the device's fma(a, b, c) to element 3 and the
// kernels' emulated fused multiply-add to element 4. With a = b = 1 + 2^-12
// and c = -(1 + 2^-11) the fused result is 2^-24 and the result with the
// product rounded first is 0, so native and emulated say whether each is
// really fused here: the metrics whose kernels reproduce the CPU's fused
// arithmetic bit for bit pick their FMA by it.
func ProbeFMA(g *GPU, name, src string) (native, emulated bool, err error) {
	m, err := g.Module(name, src)
	if err != nil {
		return false, false, err
	}
	p, err := g.Pipeline(m, "probe", nil)
	if err != nil {
		return false, false, err
	}
	io, err := g.Storage(32)
	if err != nil {
		return false, false, err
	}
	defer io.Release()
	a := float32(1 + 1.0/4096)
	WriteSlice(g, io, 0, []float32{a, a, -(1 + 1.0/2048), 0, 0, 0, 0, 0})
	e := g.Encoder()
	e.Dispatch(p, 1, 1, 1, io)
	out := make([]float32, 8)
	if err := SubmitRead(e, io, 0, out); err != nil {
		return false, false, err
	}
	want := float32(1.0 / (1 << 24))
	return out[3] == want, out[4] == want, nil
}
