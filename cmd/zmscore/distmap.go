package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
)

// mapPlaceholders are the spellings of "the DIST's name" in a map path.
var mapPlaceholders = []string{"{}", "%s"}

// distName is what replaces a placeholder: the DIST's file name without
// directory and extension ("out/a.q80.png" → "a.q80").
func distName(dist string) string {
	base := filepath.Base(dist)
	if n := strings.TrimSuffix(base, filepath.Ext(base)); n != "" {
		return n
	}
	return base
}

// mapPaths expands the path template of --distmap or --rawdistmap (flag)
// into one output path per DIST. Without a placeholder the template is
// only accepted for a single DIST.
func mapPaths(flag, tmpl string, dists []string) ([]string, error) {
	if tmpl == "" {
		return nil, fmt.Errorf("%s needs a file name", flag)
	}
	templated := false
	for _, ph := range mapPlaceholders {
		templated = templated || strings.Contains(tmpl, ph)
	}
	if !templated && len(dists) > 1 {
		return nil, fmt.Errorf("%s %q names one file for %d DISTs; put {} or %%s in it for each DIST's name (e.g. maps/{}.png)",
			flag, tmpl, len(dists))
	}
	out := make([]string, len(dists))
	for i, d := range dists {
		p := tmpl
		if templated {
			name := distName(d)
			for _, ph := range mapPlaceholders {
				p = strings.ReplaceAll(p, ph, name)
			}
		}
		out[i] = p
	}
	return out, nil
}

// checkOutputs refuses map paths that collide with each other or would
// overwrite an input image.
func checkOutputs(inputs []string, lists ...[]string) error {
	in := map[string]bool{}
	for _, p := range inputs {
		in[filepath.Clean(p)] = true
	}
	seen := map[string]bool{}
	for _, list := range lists {
		for _, p := range list {
			c := filepath.Clean(p)
			if in[c] {
				return fmt.Errorf("map output %q would overwrite an input image", p)
			}
			if seen[c] {
				return fmt.Errorf("map output %q would be written more than once (DISTs with the same name? use a different template)", p)
			}
			seen[c] = true
		}
	}
	return nil
}

// butteraugliOutputs copies Butteraugli's extras to the top level of r and
// writes the maps asked for DIST number i (of ref's size). An error fails
// that DIST.
func butteraugliOutputs(r *result, s zenmetrics.Score, opt *options, i int, ref *zenmetrics.Image) error {
	finite := func(name string) (*float64, error) {
		v, ok := s.Extras[name]
		if !ok {
			return nil, nil
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("metric returned %s %v", name, v)
		}
		return &v, nil
	}
	var err error
	if r.PNorm3, err = finite("pnorm3"); err != nil {
		return err
	}
	if opt.pnorm > 0 {
		if r.PNorm, err = finite("pnorm"); err != nil {
			return err
		}
		if r.PNorm == nil {
			return fmt.Errorf("backend did not report the %g-norm", opt.pnorm)
		}
	}
	return mapOutputs(r, s, opt, i, ref, butteraugliHeatMap)
}

// butteraugliHeatMap is butteraugli_main's --distmap colouring.
func butteraugliHeatMap(m *zenmetrics.FloatPlane) *zenmetrics.Image {
	good, bad := imageio.ButteraugliHeatMapThresholds()
	return imageio.HeatMap(m, good, bad)
}

// greyMap is ColorVideoVDP's --distmap: its raw heatmap (0 = no
// difference, 1 = 0 JOD) clamped to 0..1 as 8-bit grey, rounded to
// nearest even like the other maps' PNGs.
func greyMap(m *zenmetrics.FloatPlane) *zenmetrics.Image {
	im := zenmetrics.NewImage(m.Width, m.Height, zenmetrics.Gray8)
	for i, v := range m.Pix[:m.Width*m.Height] {
		im.Pix[i] = byte(math.RoundToEven(float64(min(max(v, 0), 1)) * 255))
	}
	return im
}

// mapOutputs writes the maps asked for DIST number i (of ref's size) from
// s.DistMap: --distmap as the PNG colour gives, --rawdistmap as PFM. An
// error fails that DIST.
func mapOutputs(r *result, s zenmetrics.Score, opt *options, i int, ref *zenmetrics.Image, colour func(*zenmetrics.FloatPlane) *zenmetrics.Image) error {
	if !opt.wantMaps() {
		return nil
	}
	m := s.DistMap
	if m == nil {
		return errors.New("backend returned no distance map")
	}
	if m.Width != ref.Width || m.Height != ref.Height || len(m.Pix) < m.Width*m.Height {
		return fmt.Errorf("backend returned a %dx%d distance map (%d values) for a %dx%d image",
			m.Width, m.Height, len(m.Pix), ref.Width, ref.Height)
	}
	if opt.distMaps != nil {
		heat := colour(m)
		path := opt.distMaps[i]
		if err := writeFile(path, func(w io.Writer) error { return imageio.EncodePNG(w, heat) }); err != nil {
			return fmt.Errorf("writing --distmap: %w", err)
		}
		r.DistMap = path
	}
	if opt.rawDistMaps != nil {
		path := opt.rawDistMaps[i]
		if err := writeFile(path, func(w io.Writer) error { return imageio.WritePFM(w, m) }); err != nil {
			return fmt.Errorf("writing --rawdistmap: %w", err)
		}
		r.RawDistMap = path
	}
	return nil
}

// writeFile creates path and fills it with write; a file left half written
// by a failure is removed.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
