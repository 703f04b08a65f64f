package capability

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/zenmetrics-go/zenmetrics"
)

// SchemaVersion is the profile layout this code reads and writes. A file
// with another version is re-measured rather than guessed at.
const SchemaVersion = 1

// DefaultCacheValidity is how long a profile is trusted before it is
// re-measured: long enough that a fleet does not bench on every start, short
// enough that a driver update nobody told us about is noticed within a week.
const DefaultCacheValidity = 7 * 24 * time.Hour

// Backend classes: the keys of the per-size tables in the profile. A class
// is a compute path and memory layout, not a device, so that a profile
// written on one 8-GPU host applies to every identical adapter on it. GPU
// classes are "<runtime>_<layout>" (Runtime.Class): the same GPU runs a
// metric at different speeds and in different memory through WebGPU and
// through CUDA, so each runtime has its own cells.
const (
	ClassGPUFull      = "gpu_full"
	ClassGPUStrip     = "gpu_strip"
	ClassGPUStripPair = "gpu_strip_pair"
	ClassCUDAFull     = "cuda_full"
	ClassCPU          = "cpu"
)

// Runtime is the API a GPU class runs through; its string is the prefix of
// the runtime's classes.
type Runtime string

// GPU runtimes. WebGPU's prefix is "gpu" because its classes were the only
// GPU ones when profiles were first written: keeping the name keeps those
// files valid without a schema change. New runtimes add classes (new keys
// in the same tables), which older builds ignore and newer ones read, so
// no schema_version bump is needed for them either.
const (
	RuntimeWebGPU Runtime = "gpu"
	RuntimeCUDA   Runtime = "cuda"
)

// Class is the profile class of this runtime in a memory layout:
// RuntimeWebGPU.Class(ModeStrip) is "gpu_strip", RuntimeCUDA.Class(ModeFull)
// "cuda_full". A layout a runtime gains later (CUDA strips) gets its class
// from here without any other change to the profile.
func (r Runtime) Class(mode zenmetrics.Mode) string {
	return string(r) + "_" + mode.String()
}

// classOrder ranks the known classes for listings: layout first (what the
// ladder tries first), runtimes side by side within a layout, so a table
// shows the two runtimes' full-image cells next to each other.
var classOrder = []string{
	ClassGPUFull, ClassCUDAFull,
	ClassGPUStrip, RuntimeCUDA.Class(zenmetrics.ModeStrip),
	ClassGPUStripPair, RuntimeCUDA.Class(zenmetrics.ModeStripPair),
	ClassCPU,
}

// Classes lists the classes that have a measurement or an out-of-memory
// cell for metric m, known ones in classOrder, then any other (written by
// a newer build) by name, so a listing shows whatever the file holds.
func (p *Profile) Classes(m zenmetrics.Metric) []string {
	if p == nil || p.Metrics[m] == nil {
		return nil
	}
	mp := p.Metrics[m]
	seen := map[string]bool{}
	for _, t := range []map[int64]map[string]float64{mp.NsPerPxAt, mp.VRAMMiBAt} {
		for _, row := range t {
			for c := range row {
				seen[c] = true
			}
		}
	}
	for _, c := range mp.CellsFailedOOM {
		seen[c.Backend] = true
	}
	var out, other []string
	for _, c := range classOrder {
		if seen[c] {
			out = append(out, c)
			delete(seen, c)
		}
	}
	for c := range seen {
		other = append(other, c)
	}
	sort.Strings(other)
	return append(out, other...)
}

// Errors a Store reports when a file exists but cannot be used. All of them
// mean "re-measure", never "stop": callers log them and bench again.
var (
	// ErrNoProfile: no profile file for this machine yet.
	ErrNoProfile = errors.New("capability: no profile")
	// ErrCorruptProfile: the file does not parse as a profile.
	ErrCorruptProfile = errors.New("capability: corrupt profile")
	// ErrSchemaMismatch: the file has another schema_version.
	ErrSchemaMismatch = errors.New("capability: profile schema version differs")
	// ErrForeignProfile: the file describes other hardware (copied from
	// another machine, or renamed by hand).
	ErrForeignProfile = errors.New("capability: profile from another machine")
)

// Cell is one (backend class, pixel count) combination.
type Cell struct {
	Backend string
	Pixels  int64
}

// Sample is what was measured for one backend class at one size. NsPerPx is
// 0 when only VRAM is known, VRAMMiB is 0 when only timing is known.
// Spread is NsPerPx's noise, the timed runs' half range over their p50
// (BenchResult.Spread); 0 when unknown (one run, or a profile written
// before spreads were kept).
type Sample struct {
	Pixels  int64
	NsPerPx float64
	VRAMMiB float64
	Spread  float64
}

// MetricProfile holds the measurements of one metric. Tables are keyed by
// pixel count, then by backend class, mirroring the file.
type MetricProfile struct {
	LastMeasured time.Time
	NsPerPxAt    map[int64]map[string]float64
	VRAMMiBAt    map[int64]map[string]float64
	// SpreadAt is the noise of each NsPerPxAt entry (Sample.Spread),
	// where it was measured.
	SpreadAt map[int64]map[string]float64
	// CellsFailedOOM lists the cells that ran out of memory on this
	// machine; the chooser never tries them again (see orchestrator).
	CellsFailedOOM []Cell
}

// Profile is one machine's capability profile: the hardware it was measured
// on and what each metric costs on each backend class at a few sizes.
type Profile struct {
	SchemaVersion int
	MachineHash   string
	// DetectedAt is when the hardware description was first written.
	DetectedAt time.Time
	// LastValidated is when the measurements were last taken; staleness by
	// age counts from here.
	LastValidated time.Time
	CPU           CPUInfo
	GPUs          []GPUInfo
	Metrics       map[zenmetrics.Metric]*MetricProfile
}

// NewProfile returns an empty profile for the hardware in r.
func NewProfile(r *Report, now time.Time) *Profile {
	p := &Profile{
		SchemaVersion: SchemaVersion,
		DetectedAt:    now.UTC().Truncate(time.Second),
		Metrics:       map[zenmetrics.Metric]*MetricProfile{},
	}
	if r != nil {
		p.CPU = r.CPU
		p.GPUs = slices.Clone(r.GPUs)
	}
	p.MachineHash = MachineHash(p.CPU, p.GPUs)
	return p
}

// MachineHash is the first 16 hex digits of sha256 over the GPU models,
// driver versions, CPU brand and CPU features. Fields are separated by NUL
// so that no two different machines concatenate to the same bytes; GPUs are
// taken in sorted order so adapter enumeration order does not matter.
// RAM, core count and measured speeds are left out on purpose: they do not
// change what a kernel can do, and a VM resized by one core should keep its
// profile.
func MachineHash(cpu CPUInfo, gpus []GPUInfo) string {
	ids := make([]string, 0, len(gpus))
	for _, g := range gpus {
		ids = append(ids, g.Name+"\x00"+g.Driver)
	}
	sort.Strings(ids)
	feats := slices.Clone(cpu.Features)
	sort.Strings(feats)
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	h.Write([]byte{1})
	h.Write([]byte(cpu.Brand))
	h.Write([]byte{0})
	h.Write([]byte(strings.Join(feats, ",")))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ReportHash is MachineHash of a probe report.
func ReportHash(r *Report) string {
	if r == nil {
		return MachineHash(CPUInfo{}, nil)
	}
	return MachineHash(r.CPU, r.GPUs)
}

// Metric returns the entry for m, creating it.
func (p *Profile) Metric(m zenmetrics.Metric) *MetricProfile {
	if p.Metrics == nil {
		p.Metrics = map[zenmetrics.Metric]*MetricProfile{}
	}
	mp := p.Metrics[m]
	if mp == nil {
		mp = &MetricProfile{}
		p.Metrics[m] = mp
	}
	return mp
}

// Samples returns what is known for metric m on a backend class, sorted by
// pixel count. Nil when nothing is known (or p is nil).
func (p *Profile) Samples(m zenmetrics.Metric, class string) []Sample {
	if p == nil {
		return nil
	}
	mp := p.Metrics[m]
	if mp == nil {
		return nil
	}
	byPx := map[int64]*Sample{}
	get := func(px int64) *Sample {
		s := byPx[px]
		if s == nil {
			s = &Sample{Pixels: px}
			byPx[px] = s
		}
		return s
	}
	for px, row := range mp.NsPerPxAt {
		if v, ok := row[class]; ok {
			get(px).NsPerPx = v
		}
	}
	for px, row := range mp.VRAMMiBAt {
		if v, ok := row[class]; ok {
			get(px).VRAMMiB = v
		}
	}
	for px, row := range mp.SpreadAt {
		if s := byPx[px]; s != nil && s.NsPerPx > 0 {
			s.Spread = row[class]
		}
	}
	out := make([]Sample, 0, len(byPx))
	for _, s := range byPx {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Sample) int { return cmpInt64(a.Pixels, b.Pixels) })
	return out
}

// SetSample records a measurement. A zero or negative value is not stored;
// a timing recorded without a spread drops the spread of the timing it
// replaces, which described other runs.
func (p *Profile) SetSample(m zenmetrics.Metric, class string, s Sample) {
	mp := p.Metric(m)
	if s.NsPerPx > 0 {
		setCell(&mp.NsPerPxAt, s.Pixels, class, s.NsPerPx)
		if s.Spread > 0 {
			setCell(&mp.SpreadAt, s.Pixels, class, s.Spread)
		} else if row := mp.SpreadAt[s.Pixels]; row != nil {
			delete(row, class)
			if len(row) == 0 {
				delete(mp.SpreadAt, s.Pixels)
			}
		}
	}
	if s.VRAMMiB > 0 {
		setCell(&mp.VRAMMiBAt, s.Pixels, class, s.VRAMMiB)
	}
}

// setCell sets (*t)[px][class], making the maps it needs.
func setCell(t *map[int64]map[string]float64, px int64, class string, v float64) {
	if *t == nil {
		*t = map[int64]map[string]float64{}
	}
	if (*t)[px] == nil {
		(*t)[px] = map[string]float64{}
	}
	(*t)[px][class] = v
}

// OOMCells returns the cells of metric m that ran out of memory.
func (p *Profile) OOMCells(m zenmetrics.Metric) []Cell {
	if p == nil || p.Metrics[m] == nil {
		return nil
	}
	return slices.Clone(p.Metrics[m].CellsFailedOOM)
}

// RecordOOM adds a failed cell; it reports whether the cell was new.
func (p *Profile) RecordOOM(m zenmetrics.Metric, c Cell) bool {
	mp := p.Metric(m)
	if slices.Contains(mp.CellsFailedOOM, c) {
		return false
	}
	mp.CellsFailedOOM = append(mp.CellsFailedOOM, c)
	slices.SortFunc(mp.CellsFailedOOM, func(a, b Cell) int {
		if c := strings.Compare(a.Backend, b.Backend); c != 0 {
			return c
		}
		return cmpInt64(a.Pixels, b.Pixels)
	})
	return true
}

// Clone returns a deep copy, so a reader can keep a snapshot while the
// orchestrator records new cells.
func (p *Profile) Clone() *Profile {
	if p == nil {
		return nil
	}
	q := *p
	q.GPUs = slices.Clone(p.GPUs)
	q.CPU.Features = slices.Clone(p.CPU.Features)
	q.Metrics = make(map[zenmetrics.Metric]*MetricProfile, len(p.Metrics))
	for m, mp := range p.Metrics {
		c := &MetricProfile{LastMeasured: mp.LastMeasured, CellsFailedOOM: slices.Clone(mp.CellsFailedOOM)}
		c.NsPerPxAt = cloneTable(mp.NsPerPxAt)
		c.VRAMMiBAt = cloneTable(mp.VRAMMiBAt)
		c.SpreadAt = cloneTable(mp.SpreadAt)
		q.Metrics[m] = c
	}
	return &q
}

func cloneTable(t map[int64]map[string]float64) map[int64]map[string]float64 {
	if t == nil {
		return nil
	}
	out := make(map[int64]map[string]float64, len(t))
	for k, row := range t {
		r := make(map[string]float64, len(row))
		for c, v := range row {
			r[c] = v
		}
		out[k] = r
	}
	return out
}

// StaleReason says why a profile must be re-measured; "" means it is fresh.
type StaleReason string

// Reasons a profile is stale.
const (
	StaleMissing        StaleReason = "missing"
	StaleAge            StaleReason = "older than the cache validity"
	StaleGPUChanged     StaleReason = "GPU model or driver changed"
	StaleHardware       StaleReason = "hardware differs from the profile (copied from another machine?)"
	StaleSchema         StaleReason = "other schema version"
	StaleNoMeasurements StaleReason = "no measurements"
)

// Staleness decides whether p can still be trusted on the machine a fresh
// probe describes. validity ≤ 0 means DefaultCacheValidity. The checks are
// ordered so the reason logged is the most useful one: hardware first (a
// copied profile is wrong whatever its age), then age.
func (p *Profile) Staleness(fresh *Report, now time.Time, validity time.Duration) StaleReason {
	if p == nil {
		return StaleMissing
	}
	if p.SchemaVersion != SchemaVersion {
		return StaleSchema
	}
	if validity <= 0 {
		validity = DefaultCacheValidity
	}
	// The stored hash must agree with the stored hardware (else the file
	// was edited or assembled from parts), and both with this machine.
	if p.MachineHash != MachineHash(p.CPU, p.GPUs) {
		return StaleHardware
	}
	if fresh != nil {
		if gpuIdentity(p.GPUs) != gpuIdentity(fresh.GPUs) {
			return StaleGPUChanged
		}
		if p.MachineHash != ReportHash(fresh) {
			return StaleHardware
		}
	}
	if len(p.Metrics) == 0 {
		return StaleNoMeasurements
	}
	if p.LastValidated.IsZero() || now.Sub(p.LastValidated) > validity {
		return StaleAge
	}
	return ""
}

func gpuIdentity(gs []GPUInfo) string {
	ids := make([]string, 0, len(gs))
	for _, g := range gs {
		ids = append(ids, g.Name+"\x00"+g.Driver)
	}
	sort.Strings(ids)
	return strings.Join(ids, "\x01")
}

// DefaultCacheDir is $XDG_CACHE_HOME/zenmetrics on Linux, and the platform
// equivalent elsewhere (os.UserCacheDir).
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("capability: no cache directory: %w", err)
	}
	return filepath.Join(d, "zenmetrics"), nil
}

// ProfilePath is where the profile of the machine with hash lives in dir.
func ProfilePath(dir, hash string) string {
	return filepath.Join(dir, "capability_"+hash+".toml")
}

// --- file format -----------------------------------------------------------

// fileProfile is the on-disk shape. It differs from Profile only where TOML
// needs strings (pixel keys, metric names) or mixed arrays (OOM cells).
type fileProfile struct {
	SchemaVersion int                    `toml:"schema_version"`
	MachineHash   string                 `toml:"machine_hash"`
	DetectedAt    time.Time              `toml:"detected_at"`
	LastValidated time.Time              `toml:"last_validated"`
	CPU           CPUInfo                `toml:"cpu"`
	GPU           []GPUInfo              `toml:"gpu"`
	Metrics       map[string]*fileMetric `toml:"metrics"`
}

// fileMetric's ns_per_px_spread_at came after schema 1's first files
// without a version bump, as new classes did (Runtime): a file without it
// loads with every spread unknown, and a build that predates it ignores
// the table (the decoder skips keys it has no field for).
type fileMetric struct {
	LastMeasured    time.Time                     `toml:"last_measured"`
	CellsFailedOOM  [][]any                       `toml:"cells_failed_oom"`
	NsPerPxAt       map[string]map[string]float64 `toml:"ns_per_px_at"`
	VRAMMiBAt       map[string]map[string]float64 `toml:"vram_mib_at"`
	NsPerPxSpreadAt map[string]map[string]float64 `toml:"ns_per_px_spread_at,omitempty"`
}

// Marshal encodes p as TOML in the documented layout.
func (p *Profile) Marshal() ([]byte, error) {
	f := fileProfile{
		SchemaVersion: p.SchemaVersion,
		MachineHash:   p.MachineHash,
		DetectedAt:    p.DetectedAt.UTC(),
		LastValidated: p.LastValidated.UTC(),
		CPU:           p.CPU,
		GPU:           p.GPUs,
		Metrics:       map[string]*fileMetric{},
	}
	for m, mp := range p.Metrics {
		if !m.Valid() || mp == nil {
			continue
		}
		fm := &fileMetric{
			LastMeasured:   mp.LastMeasured.UTC(),
			CellsFailedOOM: [][]any{},
			NsPerPxAt:      tableToFile(mp.NsPerPxAt),
			VRAMMiBAt:      tableToFile(mp.VRAMMiBAt),
		}
		if len(mp.SpreadAt) > 0 {
			fm.NsPerPxSpreadAt = tableToFile(mp.SpreadAt)
		}
		for _, c := range mp.CellsFailedOOM {
			fm.CellsFailedOOM = append(fm.CellsFailedOOM, []any{c.Backend, c.Pixels})
		}
		f.Metrics[m.String()] = fm
	}
	var buf bytes.Buffer
	buf.WriteString("# zenmetrics capability profile: written by zmwarm / the orchestrator.\n")
	buf.WriteString("# Safe to delete; it is re-measured when missing, stale or foreign.\n")
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("capability: encode profile: %w", err)
	}
	return buf.Bytes(), nil
}

func tableToFile(t map[int64]map[string]float64) map[string]map[string]float64 {
	out := make(map[string]map[string]float64, len(t))
	for px, row := range t {
		r := make(map[string]float64, len(row))
		for c, v := range row {
			r[c] = round3(v)
		}
		out[strconv.FormatInt(px, 10)] = r
	}
	return out
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Unmarshal decodes a profile. Any error wraps ErrCorruptProfile or
// ErrSchemaMismatch; hardware checks are Staleness's job.
func Unmarshal(data []byte) (*Profile, error) {
	var f fileProfile
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptProfile, err)
	}
	if !md.IsDefined("schema_version") {
		return nil, fmt.Errorf("%w: no schema_version", ErrCorruptProfile)
	}
	if f.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%w: file has %d, this build reads %d", ErrSchemaMismatch, f.SchemaVersion, SchemaVersion)
	}
	if len(f.MachineHash) != 16 {
		return nil, fmt.Errorf("%w: machine_hash %q is not 16 hex digits", ErrCorruptProfile, f.MachineHash)
	}
	p := &Profile{
		SchemaVersion: f.SchemaVersion,
		MachineHash:   f.MachineHash,
		DetectedAt:    f.DetectedAt,
		LastValidated: f.LastValidated,
		CPU:           f.CPU,
		GPUs:          f.GPU,
		Metrics:       map[zenmetrics.Metric]*MetricProfile{},
	}
	for name, fm := range f.Metrics {
		m, err := zenmetrics.ParseMetric(name)
		if err != nil || fm == nil {
			// A metric from a newer build: keep going, it will be
			// measured again if this build ever supports it.
			continue
		}
		mp := &MetricProfile{LastMeasured: fm.LastMeasured}
		if mp.NsPerPxAt, err = tableFromFile(fm.NsPerPxAt); err != nil {
			return nil, err
		}
		if mp.VRAMMiBAt, err = tableFromFile(fm.VRAMMiBAt); err != nil {
			return nil, err
		}
		if mp.SpreadAt, err = tableFromFile(fm.NsPerPxSpreadAt); err != nil {
			return nil, err
		}
		for i, c := range fm.CellsFailedOOM {
			cell, err := cellFromFile(c)
			if err != nil {
				return nil, fmt.Errorf("%w: metrics.%s.cells_failed_oom[%d]: %v", ErrCorruptProfile, name, i, err)
			}
			mp.CellsFailedOOM = append(mp.CellsFailedOOM, cell)
		}
		p.Metrics[m] = mp
	}
	return p, nil
}

func tableFromFile(t map[string]map[string]float64) (map[int64]map[string]float64, error) {
	if len(t) == 0 {
		return nil, nil
	}
	out := make(map[int64]map[string]float64, len(t))
	for k, row := range t {
		px, err := strconv.ParseInt(k, 10, 64)
		if err != nil || px <= 0 {
			return nil, fmt.Errorf("%w: pixel count %q is not a positive integer", ErrCorruptProfile, k)
		}
		for c, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("%w: %s at %d pixels is %v", ErrCorruptProfile, c, px, v)
			}
		}
		out[px] = row
	}
	return out, nil
}

func cellFromFile(c []any) (Cell, error) {
	if len(c) != 2 {
		return Cell{}, fmt.Errorf("want [backend, pixels], got %d items", len(c))
	}
	b, ok := c[0].(string)
	if !ok {
		return Cell{}, fmt.Errorf("backend %v is not a string", c[0])
	}
	px, ok := c[1].(int64)
	if !ok || px <= 0 {
		return Cell{}, fmt.Errorf("pixels %v is not a positive integer", c[1])
	}
	return Cell{Backend: b, Pixels: px}, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
