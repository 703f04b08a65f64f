package batch

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/safeio"
)

// Pair is one comparison to make.
type Pair struct {
	// ID names the pair in the output: the manifest's id, or PairID(Ref, Dist).
	ID string
	// Ref and Dist are the paths as the manifest wrote them (or as found
	// under --ref-dir/--dist-dir); they go into the output unchanged.
	Ref, Dist string
	// RefPath and DistPath are the files opened: Ref and Dist resolved
	// against the manifest's folder.
	RefPath, DistPath string
	// Metrics overrides the run's metric list for this pair (the manifest's
	// optional metric column); nil means the run's list.
	Metrics []zenmetrics.Metric
	// Line is the manifest line the pair came from (0 when not from a file).
	Line int
}

// PairID is the id of a pair without an explicit one: the first 16 hex
// digits of the 128-bit XXH3 of ref, a NUL byte and dist, the paths as
// written in the manifest with forward slashes. It does not depend on the
// machine or the folder the run starts in, so shards on different machines
// agree.
func PairID(ref, dist string) string {
	h := xxh3.HashString128(filepath.ToSlash(ref) + "\x00" + filepath.ToSlash(dist))
	b := h.Bytes()
	return hex.EncodeToString(b[:8])
}

// ManifestError is a fatal problem in a manifest (bad header, unknown
// metric, duplicate id) with the line it was found on.
type ManifestError struct {
	Path string
	Line int
	Msg  string
}

func (e *ManifestError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return e.Path + ": " + e.Msg
}

// maxManifestBytes bounds a manifest file: 4 GiB is some 20 million rows
// of ordinary paths, and parsing holds the file and its pairs in memory.
const maxManifestBytes = 4 << 30

// ReadManifest reads a manifest file. format may be "" to choose by the
// file's extension (.tsv, .csv, .jsonl/.json/.ndjson) or, failing that, by
// sniffing its first bytes ('{' is JSONL, a tab in the first line TSV, else
// CSV). TSV and CSV need a header row naming at least the columns ref and
// dist; id and metric are optional, other columns are ignored. JSONL lines
// are objects with the same fields (id may be a number, metric a string or a
// list). Blank lines and, in TSV and CSV, lines starting with '#' are
// skipped. Relative paths are relative to the manifest's folder. The metric
// column holds one metric or a comma-separated list.
func ReadManifest(path string, format Format) ([]Pair, error) {
	// Only a regular file, of bounded size: /dev/zero or a FIFO named as
	// the manifest must fail at once, not grow memory or hang.
	data, err := safeio.ReadFile(path, maxManifestBytes)
	if errors.Is(err, safeio.ErrNotRegular) || errors.Is(err, safeio.ErrTooLarge) {
		return nil, &ManifestError{Path: path, Msg: err.Error()}
	}
	if err != nil {
		return nil, &zenmetrics.InputError{Path: path, Err: err}
	}
	return parseManifest(path, data, format)
}

func parseManifest(path string, data []byte, format Format) ([]Pair, error) {
	// A UTF-8 byte-order mark (Windows editors write one) is not data, in
	// any format.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if format == "" {
		if f, ok := FormatFromPath(path); ok && f != Parquet {
			format = f
		} else {
			format = sniffManifest(data)
		}
	}
	base := filepath.Dir(path)
	var pairs []Pair
	add := func(line int, ref, dist, id, metrics string, mlist []string) error {
		ref, dist = strings.TrimSpace(ref), strings.TrimSpace(dist)
		if ref == "" || dist == "" {
			return &ManifestError{path, line, "empty ref or dist"}
		}
		p := Pair{ID: strings.TrimSpace(id), Ref: ref, Dist: dist, Line: line,
			RefPath: resolve(base, ref), DistPath: resolve(base, dist)}
		if p.ID == "" {
			p.ID = PairID(ref, dist)
		}
		if metrics != "" {
			mlist = append(mlist, metrics)
		}
		if len(mlist) > 0 {
			ms, err := zenmetrics.ParseMetrics(strings.Join(mlist, ","))
			if err != nil {
				return &ManifestError{path, line, err.Error()}
			}
			p.Metrics = ms
		}
		pairs = append(pairs, p)
		return nil
	}
	switch format {
	case JSONL:
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		line := 0
		for sc.Scan() {
			line++
			text := bytes.TrimSpace(sc.Bytes())
			if len(text) == 0 {
				continue
			}
			var rec struct {
				Ref, Dist string
				ID        json.RawMessage
				Metric    json.RawMessage
			}
			if err := json.Unmarshal(text, &rec); err != nil {
				return nil, &ManifestError{path, line, "bad JSON: " + err.Error()}
			}
			id, err := rawString(rec.ID)
			if err != nil {
				return nil, &ManifestError{path, line, "id: " + err.Error()}
			}
			var ml []string
			if len(rec.Metric) > 0 && string(rec.Metric) != "null" {
				if err := json.Unmarshal(rec.Metric, &ml); err != nil {
					s, err2 := rawString(rec.Metric)
					if err2 != nil {
						return nil, &ManifestError{path, line, "metric: want a string or a list of strings"}
					}
					ml = []string{s}
				}
			}
			if err := add(line, rec.Ref, rec.Dist, id, "", ml); err != nil {
				return nil, err
			}
		}
		if err := sc.Err(); err != nil {
			return nil, &ManifestError{path, line + 1, err.Error()}
		}
	case TSV, CSV:
		recs, lines, err := splitTable(data, format)
		if err != nil {
			return nil, &ManifestError{path, 0, err.Error()}
		}
		if len(recs) == 0 {
			return nil, &ManifestError{path, 0, "empty manifest"}
		}
		col := headerIndex(recs[0])
		ri, ok1 := col["ref"]
		di, ok2 := col["dist"]
		if !ok1 || !ok2 {
			return nil, &ManifestError{path, lines[0], fmt.Sprintf("header %q lacks the columns ref and dist", recs[0])}
		}
		get := func(rec []string, name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return rec[i]
			}
			return ""
		}
		for k, rec := range recs[1:] {
			line := lines[k+1]
			if ri >= len(rec) || di >= len(rec) {
				return nil, &ManifestError{path, line, fmt.Sprintf("%d fields, fewer than the header's", len(rec))}
			}
			if err := add(line, rec[ri], rec[di], get(rec, "id"), get(rec, "metric"), nil); err != nil {
				return nil, err
			}
		}
	default:
		return nil, &ManifestError{path, 0, fmt.Sprintf("a manifest cannot be %s", format)}
	}
	if len(pairs) == 0 {
		return nil, &ManifestError{path, 0, "no pairs"}
	}
	return pairs, nil
}

func rawString(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", errors.New("want a string or a number")
}

func sniffManifest(data []byte) Format {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(t) > 0 && t[0] == '{' {
		return JSONL
	}
	first, _, _ := bytes.Cut(t, []byte("\n"))
	if bytes.IndexByte(first, '\t') >= 0 {
		return TSV
	}
	return CSV
}

// splitTable returns the records of a TSV or CSV manifest and the line
// number of each, skipping blank and '#' lines.
func splitTable(data []byte, format Format) ([][]string, []int, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	var recs [][]string
	var lines []int
	if format == TSV {
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimRight(line, "\r")
			if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
				continue
			}
			recs = append(recs, strings.Split(line, "\t"))
			lines = append(lines, i+1)
		}
		return recs, lines, nil
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.Comment = '#'
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		line, _ := r.FieldPos(0)
		recs = append(recs, rec)
		lines = append(lines, line)
	}
	return recs, lines, nil
}

func resolve(base, p string) string {
	if filepath.IsAbs(p) || base == "" {
		return p
	}
	return filepath.Join(base, p)
}

// Default name patterns for PairDirs. A distorted file NAME__anything.ext
// pairs with the reference NAME__ref.ext (any image extension), the layout
// of the project's corpus (astronaut__jpeg_q20.png ↔ astronaut__ref.png).
const (
	DefaultDistPattern = `^(?P<name>.+?)__.+\.[A-Za-z0-9]+$`
	DefaultRefPattern  = `^(?P<name>.+?)__ref\.[A-Za-z0-9]+$`
)

// PairDirs pairs the files under distDir with those under refDir (both
// walked recursively, hidden files skipped). Each file's base name is
// matched against a pattern whose named group "name" (or, lacking one, the
// first group) is the pairing key: refPattern for references, distPattern
// for distorted files. Empty patterns mean the defaults above. A distorted
// file whose key has no reference is reported in unpaired; a file that is
// itself a reference (same path, or matching refPattern when the folders
// are the same) is not a distorted file. Two references with one key are an
// error. Pairs come sorted by reference, then distorted path.
func PairDirs(refDir, distDir, refPattern, distPattern string) (pairs []Pair, unpaired []string, err error) {
	if refPattern == "" {
		refPattern = DefaultRefPattern
	}
	if distPattern == "" {
		distPattern = DefaultDistPattern
	}
	rre, err := compileKeyPattern(refPattern)
	if err != nil {
		return nil, nil, fmt.Errorf("--ref-pattern: %w", err)
	}
	dre, err := compileKeyPattern(distPattern)
	if err != nil {
		return nil, nil, fmt.Errorf("--pair-pattern: %w", err)
	}
	refs := map[string]string{}
	refSet := map[string]bool{}
	err = walkFiles(refDir, func(p string) error {
		k, ok := matchKey(rre, filepath.Base(p))
		if !ok {
			return nil
		}
		if old, dup := refs[k]; dup {
			return fmt.Errorf("two references for %q: %s and %s", k, old, p)
		}
		refs[k] = p
		refSet[filepath.Clean(p)] = true
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sameDir := filepath.Clean(refDir) == filepath.Clean(distDir)
	err = walkFiles(distDir, func(p string) error {
		if refSet[filepath.Clean(p)] {
			return nil
		}
		base := filepath.Base(p)
		if sameDir {
			if _, isRef := matchKey(rre, base); isRef {
				return nil
			}
		}
		k, ok := matchKey(dre, base)
		if !ok {
			return nil
		}
		ref, ok := refs[k]
		if !ok {
			unpaired = append(unpaired, p)
			return nil
		}
		pairs = append(pairs, Pair{ID: PairID(ref, p), Ref: ref, Dist: p, RefPath: ref, DistPath: p})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].Ref != pairs[j].Ref {
			return pairs[i].Ref < pairs[j].Ref
		}
		return pairs[i].Dist < pairs[j].Dist
	})
	return pairs, unpaired, nil
}

func compileKeyPattern(p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	if re.NumSubexp() == 0 {
		return nil, fmt.Errorf("pattern %q has no group: name the pairing key with (?P<name>...)", p)
	}
	return re, nil
}

func matchKey(re *regexp.Regexp, name string) (string, bool) {
	m := re.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	if i := re.SubexpIndex("name"); i > 0 {
		return m[i], m[i] != ""
	}
	return m[1], m[1] != ""
}

func walkFiles(dir string, fn func(string) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if p != dir && strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		return fn(p)
	})
}
