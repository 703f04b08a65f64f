package zensim

import "github.com/zenmetrics-go/zenmetrics/cpu/zensim/zensimtest"

// Short names for zensimtest's generators in this package's tests.
type rgb = zensimtest.RGB

var (
	genCheckerboard       = zensimtest.Checkerboard
	genMandelbrot         = zensimtest.Mandelbrot
	genValueNoise         = zensimtest.ValueNoise
	genColorBlocks        = zensimtest.ColorBlocks
	distortBlur           = zensimtest.Blur
	distortBlockArtifacts = zensimtest.BlockArtifacts
	toImage               = zensimtest.Image
)
