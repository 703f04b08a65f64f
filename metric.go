// Package zenmetrics holds the public types shared by every layer of the
// project: the metrics it knows, the decoded image that crosses the API, the
// score that comes back, the typed errors callers match with errors.Is, and
// the contract every compute backend (CPU, fast CPU, WebGPU, CUDA) implements.
//
// The package has no dependencies beyond the standard library so that every
// other package may import it; nothing here computes a metric.
package zenmetrics

import (
	"fmt"
	"strings"
)

// Metric names a perceptual image-quality metric.
type Metric uint8

// The metrics of the project. The zero value is not a metric, so a forgotten
// field is caught rather than silently meaning SSIMULACRA2.
const (
	SSIMULACRA2 Metric = iota + 1 // libjxl's ssimulacra2 (score 100 = identical)
	Butteraugli                   // libjxl's butteraugli_main (max distance, p-norm extras)
	DSSIM                         // kornelski/dssim
	IWSSIM                        // information-weighted SSIM (piq)
	CVVDP                         // ColorVideoVDP (pycvvdp), JOD
	Zensim                        // zensim
)

var metricNames = [...]string{
	SSIMULACRA2: "ssim2",
	Butteraugli: "butteraugli",
	DSSIM:       "dssim",
	IWSSIM:      "iwssim",
	CVVDP:       "cvvdp",
	Zensim:      "zensim",
}

// metricAliases are the other spellings users type; ParseMetric accepts them.
var metricAliases = map[string]Metric{
	"ssimulacra2":   SSIMULACRA2,
	"ssimulacra":    SSIMULACRA2,
	"ba":            Butteraugli,
	"iw-ssim":       IWSSIM,
	"colorvideovdp": CVVDP,
}

// AllMetrics lists every metric in declaration order.
func AllMetrics() []Metric {
	return []Metric{SSIMULACRA2, Butteraugli, DSSIM, IWSSIM, CVVDP, Zensim}
}

// String returns the short name used on command lines and in output files.
func (m Metric) String() string {
	if m.Valid() {
		return metricNames[m]
	}
	return fmt.Sprintf("metric(%d)", uint8(m))
}

// Valid reports whether m is one of the declared metrics.
func (m Metric) Valid() bool { return m >= SSIMULACRA2 && m <= Zensim }

// ParseMetric maps a name (case-insensitive, short name or alias) to a Metric.
// An unknown name gives an error wrapping ErrUnsupported.
func ParseMetric(s string) (Metric, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	for m := SSIMULACRA2; m <= Zensim; m++ {
		if metricNames[m] == k {
			return m, nil
		}
	}
	if m, ok := metricAliases[k]; ok {
		return m, nil
	}
	return 0, fmt.Errorf("%w: unknown metric %q (known: %s)", ErrUnsupported, s, metricList())
}

// ParseMetrics parses a comma-separated list such as "ssim2,butteraugli".
func ParseMetrics(s string) ([]Metric, error) {
	var out []Metric
	seen := map[Metric]bool{}
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		m, err := ParseMetric(part)
		if err != nil {
			return nil, err
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty metric list", ErrUnsupported)
	}
	return out, nil
}

func metricList() string {
	names := make([]string, 0, len(metricNames))
	for _, m := range AllMetrics() {
		names = append(names, m.String())
	}
	return strings.Join(names, ", ")
}

// MarshalText makes a Metric print as its short name in JSON and TOML.
func (m Metric) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("%w: invalid metric %d", ErrUnsupported, uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText accepts what ParseMetric accepts.
func (m *Metric) UnmarshalText(b []byte) error {
	v, err := ParseMetric(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
