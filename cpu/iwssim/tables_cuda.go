package iwssim

// LumaConstants are the constants of luminance, for backends that convert
// the distorted image themselves (gpu/cuda/iwssim emits them into its
// kernels' header): rgb2yiq's Y row (0.299, 0.587, 0.114) and the range
// samples are rescaled to (255). They are the variables luminance reads,
// so a backend that uses them does the same operations on the same
// numbers.
func LumaConstants() (weights [3]float64, rangeMax float64) {
	return lumaWeights, dataRange
}
