package webgpu

import (
	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// Strips (zenmetrics.ModeStrip): the planner is internal/strips, shared
// with gpu/cuda so that both runtimes cut an image the same way; these
// names are the ones the WebGPU metric packages were written against.
//
// Each metric's package states its spec and why (gpu/webgpu/butteraugli:
// FIR blurs only, so the halo is the summed reach of the chain and the
// interior is bit-identical to the full map; gpu/webgpu/ssim2: the
// recursive blur's state is carried from strip to strip, see its halo.go,
// so the interior is the full image's too and the sums differ only by
// summation order).

// StripSpec is what a metric tells the planner (strips.Spec).
type StripSpec = strips.Spec

// Strip is one band (strips.Strip).
type Strip = strips.Strip

// PlanStrips cuts h rows into bands (strips.Plan).
func PlanStrips(h, band int, spec StripSpec) ([]Strip, error) { return strips.Plan(h, band, spec) }

// StripBand picks the interior rows per band (strips.Band).
func StripBand(h int, spec StripSpec, maxCropRows int64) (int, bool) {
	return strips.Band(h, spec, maxCropRows)
}

// RowsWithin is how many rows of rowBytes fit in budget bytes
// (strips.RowsWithin).
func RowsWithin(budget, rowBytes int64) int64 { return strips.RowsWithin(budget, rowBytes) }

// StripCrop is the rows [c0, c1) of im as an image sharing im's pixels
// (strips.Crop).
func StripCrop(im *zenmetrics.Image, c0, c1 int) *zenmetrics.Image { return strips.Crop(im, c0, c1) }
