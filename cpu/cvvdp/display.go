package cvvdp

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/zenmetrics-go/zenmetrics"
)

// DefaultDisplay is pycvvdp's default display model.
const DefaultDisplay = "standard_4k"

// Display is a display model: how display-encoded samples become light
// (photometry) and how large a pixel looks (geometry). pycvvdp's
// vvdp_display_photo_eotf and vvdp_display_geometry.
type Display struct {
	Name string
	// Description is the model's "name" field.
	Description string
	// Colorspace names the input's primaries and EOTF (colorspaceEOTF).
	Colorspace string
	// ResolutionW, ResolutionH: the display's pixels.
	ResolutionW, ResolutionH int
	// DistanceM is the viewing distance in metres.
	DistanceM float64
	// DiagonalInches is the display's diagonal (0 when FOVDiagonal is set).
	DiagonalInches float64
	// FOVDiagonal is the diagonal field of view in degrees (head-mounted
	// displays), 0 otherwise.
	FOVDiagonal float64
	// PeakLuminance is the peak luminance in cd/m².
	PeakLuminance float64
	// Contrast is the panel's contrast (peak / black); when 0,
	// PeakLuminance / MinLuminance (the JSON gives one or the other).
	Contrast, MinLuminance float64
	// DistanceInches is the viewing distance in inches where the JSON
	// gives it so (DistanceM is then derived from it).
	DistanceInches float64
	// EAmbient is the ambient illuminance in lux, KRefl the panel's
	// reflectivity, Exposure the factor on the linear content.
	EAmbient, KRefl, Exposure float64
}

// displayModels are the models of pycvvdp 0.5.4's display_models.json
// (gfxdisp/ColorVideoVDP, tag v0.5.4, commit ac9cf0f,
// pycvvdp/vvdp_data/display_models.json; MIT licence), with the loader's
// defaults filled in (display_model.py: colorspace sRGB, contrast 500 when
// neither contrast nor min_luminance is given and max/min_luminance when
// min_luminance is, E_ambient 0, k_refl 0.005, exposure 1; distances in
// inches converted with 0.0254 m).
var displayModels = map[string]Display{
	"standard_4k": {Description: "30-inch 4K monitor, peak luminance 200 cd/m^2, viewed under office light levels (250 lux), seen from 2 x display height",
		Colorspace: "sRGB", ResolutionW: 3840, ResolutionH: 2160, DistanceM: 0.7472, DiagonalInches: 30, PeakLuminance: 200, Contrast: 1000, EAmbient: 250},
	"standard_hdr_pq": {Description: "30-inch 4K HDR monitor, peak luminance 1500 cd/m^2, viewed under low light levels (10 lux), seen from 2 x display height",
		Colorspace: "BT.2020-PQ", ResolutionW: 3840, ResolutionH: 2160, DistanceM: 0.7472, DiagonalInches: 30, PeakLuminance: 1500, Contrast: 1000000, EAmbient: 10},
	"standard_hdr_hlg": {Description: "30-inch 4K HDR monitor, peak luminance 1500 cd/m^2, viewed under low light levels (10 lux), seen from 2 x display height",
		Colorspace: "BT.2020-HLG", ResolutionW: 3840, ResolutionH: 2160, DistanceM: 0.7472, DiagonalInches: 30, PeakLuminance: 1500, Contrast: 1000000, EAmbient: 10},
	"standard_hdr_linear": {Description: "30-inch 4K HDR monitor, peak luminance 1500 cd/m^2, viewed under low light levels (10 lux), seen from 2 x display height",
		Colorspace: "BT.709-linear", ResolutionW: 3840, ResolutionH: 2160, DistanceM: 0.7472, DiagonalInches: 30, PeakLuminance: 1500, Contrast: 1000000, EAmbient: 10},
	"standard_hdr_linear_dark": {Description: "30-inch 4K HDR monitor, peak luminance 1500 cd/m^2, viewed in a dark room (0 lux), seen from 2 x display height",
		Colorspace: "BT.709-linear", ResolutionW: 3840, ResolutionH: 2160, DistanceM: 0.7472, DiagonalInches: 30, PeakLuminance: 1500, Contrast: 1000000, EAmbient: 0},
	"standard_hdr_linear_zoom": {Description: "30-inch 4K HDR monitor, peak luminance 4000 cd/m^2, viewed under low light levels (10 lux), seen from very close to spot super-resolution artifacts",
		Colorspace: "BT.709-linear", ResolutionW: 3840, ResolutionH: 2160, DistanceM: 0.25, DiagonalInches: 30, PeakLuminance: 10000, Contrast: 1000000, EAmbient: 10},
	"standard_fhd": {Description: "24-inch FullHD monitor, peak luminance 200 cd/m^2, viewed under office light levels (250 lux), seen from 2 x display height",
		Colorspace: "sRGB", ResolutionW: 1920, ResolutionH: 1080, DistanceM: 0.6, DiagonalInches: 24, PeakLuminance: 200, Contrast: 1000, EAmbient: 250},
	"standard_hmd": {Description: "A head-mounted VR headset, 110 deg FOV, 1440x1600 per-eye resolution",
		Colorspace: "sRGB", ResolutionW: 1440, ResolutionH: 1600, FOVDiagonal: 110, DistanceM: 3, PeakLuminance: 100, MinLuminance: 0.1},
	"standard_phone": {Description: "A mobile phone display, ",
		Colorspace: "sRGB", ResolutionW: 2400, ResolutionH: 1080, DistanceM: 0.4, DiagonalInches: 6, PeakLuminance: 500, MinLuminance: 0.05, EAmbient: 250},
	"sdr_4k_30": {Description: "30-inch 4K SDR Monitor, viewed under office light levels (250 lux)",
		Colorspace: "sRGB", ResolutionW: 3840, ResolutionH: 2160, DistanceM: 0.6, DiagonalInches: 30, PeakLuminance: 100, Contrast: 1000, EAmbient: 250},
	"sdr_fhd_24": {Description: "24-inch 4K SDR Monitor, viewed under office light levels (250 lux)",
		Colorspace: "sRGB", ResolutionW: 1920, ResolutionH: 1080, DistanceM: 0.6, DiagonalInches: 24, PeakLuminance: 100, Contrast: 1000, EAmbient: 250},
	"htc_vive_pro": {Description: "HTC Vive Pro",
		Colorspace: "sRGB", ResolutionW: 1440, ResolutionH: 1600, FOVDiagonal: 110, DistanceM: 3, PeakLuminance: 133.3, MinLuminance: 0.1},
	"iphone_12_pro": {Description: "iPhone 12 Pro",
		Colorspace: "sRGB", ResolutionW: 2532, ResolutionH: 1170, DistanceInches: 20, DiagonalInches: 6.1, PeakLuminance: 825, MinLuminance: 0.0004, EAmbient: 250},
	"iphone_14_pro": {Description: "iPhone 14 Pro - Horizontal",
		Colorspace: "sRGB", ResolutionW: 2532, ResolutionH: 1170, DistanceInches: 20, DiagonalInches: 6.1, PeakLuminance: 1025, MinLuminance: 0.0004, EAmbient: 250},
	"iphone_14_pro_vert": {Description: "iPhone 14 Pro - Vertical",
		Colorspace: "sRGB", ResolutionW: 1170, ResolutionH: 2532, DistanceInches: 20, DiagonalInches: 6.1, PeakLuminance: 1025, MinLuminance: 0.0004, EAmbient: 250},
	"iphone_14_pro_hdr": {Description: "iPhone 15 Pro HDR - Horizontal",
		Colorspace: "BT.2020-HLG", ResolutionW: 2532, ResolutionH: 1170, DistanceInches: 20, DiagonalInches: 6.1, PeakLuminance: 1590, MinLuminance: 0.0004, EAmbient: 10},
	"iphone_14_pro_hdr_vert": {Description: "iPhone 14 Pro HDR - Vertical",
		Colorspace: "BT.2020-HLG", ResolutionW: 1170, ResolutionH: 2532, DistanceInches: 20, DiagonalInches: 6.1, PeakLuminance: 1590, MinLuminance: 0.0004, EAmbient: 10},
	"ipad_pro_12_9": {Description: "iPad Pro 12.9",
		Colorspace: "sRGB", ResolutionW: 2732, ResolutionH: 2048, DistanceInches: 20, DiagonalInches: 12.9, PeakLuminance: 600, MinLuminance: 0.37, EAmbient: 250},
	"macbook_pro_16": {Description: "MacBook Pro 16",
		Colorspace: "sRGB", ResolutionW: 3072, ResolutionH: 1920, DistanceInches: 25, DiagonalInches: 16, PeakLuminance: 500, MinLuminance: 0.37, EAmbient: 250},
	"lg_oled_2017_sdr": {Description: "LG OLED 2017 SDR",
		Colorspace: "sRGB", ResolutionW: 3840, ResolutionH: 2160, DistanceInches: 101, DiagonalInches: 64.5, PeakLuminance: 272, MinLuminance: 0.014, EAmbient: 100},
	"lg_oled_2017_hdr": {Description: "LG OLED 2017 HDR",
		Colorspace: "sRGB", ResolutionW: 3840, ResolutionH: 2160, DistanceInches: 101, DiagonalInches: 64.5, PeakLuminance: 754, MinLuminance: 0.038, EAmbient: 100},
	"eizo_CG3146": {Description: "EIZO Prominence CG3146 31\"",
		Colorspace: "sRGB", ResolutionW: 4096, ResolutionH: 2160, DistanceM: 0.73406, DiagonalInches: 31.063, PeakLuminance: 300, Contrast: 3000, EAmbient: 0},
}

// inchToM is display_model.py's inches_to_meters (a variable: see
// LookupDisplay).
var inchToM = 0.0254

// DisplayNames lists the known display models, sorted.
func DisplayNames() []string {
	names := make([]string, 0, len(displayModels))
	for n := range displayModels {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupDisplay returns the display model called name ("" means
// DefaultDisplay). An unknown name is an error wrapping
// zenmetrics.ErrBadInput that lists the valid names.
func LookupDisplay(name string) (Display, error) {
	if name == "" {
		name = DefaultDisplay
	}
	d, ok := displayModels[name]
	if !ok {
		return Display{}, fmt.Errorf("%w: cvvdp: unknown display model %q (known: %s)",
			zenmetrics.ErrBadInput, name, strings.Join(DisplayNames(), ", "))
	}
	d.Name = name
	// Derived at run time, not as Go constants, so that each is one
	// float64 operation as in Python (a constant expression would be
	// evaluated exactly and rounded once).
	if d.Contrast == 0 {
		d.Contrast = d.PeakLuminance / d.MinLuminance
	}
	if d.DistanceInches != 0 {
		d.DistanceM = d.DistanceInches * inchToM
	}
	if d.KRefl == 0 {
		d.KRefl = 0.005
	}
	if d.Exposure == 0 {
		d.Exposure = 1
	}
	return d, nil
}

// PixelsPerDegree is the display's resolution at the centre of the view,
// vvdp_display_geometry.get_ppd in float64 as Python computes it.
func (d Display) PixelsPerDegree() float64 {
	w, h := float64(d.ResolutionW), float64(d.ResolutionH)
	ar := w / h
	var widthM float64
	if d.FOVDiagonal > 0 {
		// The diagonal FOV fixes the distance in pixels; the height in
		// degrees follows, and from it the height in metres at DistanceM.
		distPx := math.Sqrt(w*w+h*h) / (2.0 * math.Tan(radians(d.FOVDiagonal*0.5)))
		heightDeg := degrees(math.Atan(h/2/distPx)) * 2
		heightM := 2 * math.Tan(radians(heightDeg/2)) * d.DistanceM
		widthM = heightM * ar
	} else {
		diag := d.DiagonalInches * 25.4
		heightMM := math.Sqrt(diag * diag / (1 + ar*ar))
		widthM = ar * heightMM / 1000
	}
	pixDeg := 2 * degrees(math.Atan(0.5*widthM/w/d.DistanceM))
	return 1 / pixDeg
}

func radians(x float64) float64 { return x * (math.Pi / 180) }
func degrees(x float64) float64 { return x * (180 / math.Pi) }

// blackLevel returns the panel's black level and the reflected ambient
// light (cd/m²): get_black_level.
func (d Display) blackLevel() (black, refl float64) {
	return d.PeakLuminance / d.Contrast, d.EAmbient / math.Pi * d.KRefl
}
