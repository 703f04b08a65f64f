package batch

import (
	"fmt"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
)

// ImageHeader is what a file's header says, read without decoding.
type ImageHeader struct {
	Width, Height int
	// DecodeBytes bounds the memory decoding the file takes (decoder
	// image, converted image, file bytes).
	DecodeBytes int64
}

// ProbeFunc reads an image file's header (the CLI passes imageio.ProbeFile
// with --max-pixels). Errors should name the file.
type ProbeFunc func(path string) (ImageHeader, error)

// WorkingSetFunc predicts the memory scoring metric m on a w×h pair takes,
// the two decoded images included (for the CPU backend its WorkingSet,
// which is one strip's for Butteraugli and SSIMULACRA2 over the budget);
// ok false means no prediction.
type WorkingSetFunc func(m zenmetrics.Metric, w, h int) (bytes int64, ok bool)

// workingSetBpp is the bytes per pixel the CLI's WorkingSetFunc assumes
// for the decoded images (RGBA8; the header does not give the decoded
// layout, and 16-bit images are rare in corpora).
const workingSetBpp = 4

// headEntry is a reference's header, read once for all its pairs.
type headEntry struct {
	once sync.Once
	h    ImageHeader
	err  error
}

// probeRef reads (once) the header of the reference at path.
func (p *pipeline) probeRef(path string) (ImageHeader, error) {
	p.mu.Lock()
	if p.heads == nil {
		p.heads = map[string]*headEntry{}
	}
	e := p.heads[path]
	if e == nil {
		e = &headEntry{}
		p.heads[path] = e
	}
	p.mu.Unlock()
	e.once.Do(func() { e.h, e.err = p.cfg.Probe(path) })
	return e.h, e.err
}

// skipRef accounts a pair that will not use its reference (refused from
// the headers), so that the reference is still freed after its last pair
// and is not decoded at all when no pair needs it.
func (p *pipeline) skipRef(path string) {
	p.mu.Lock()
	r := p.refs[path]
	if r == nil {
		p.refLeft[path]--
		if p.refLeft[path] <= 0 {
			delete(p.heads, path)
		}
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.putRef(path, r)
}

// precheck decides from the two headers, before anything is decoded,
// what of a pair can be scored: both files must be readable images of the
// same size (a 20000² distorted image against a 64² reference is refused
// from its header), each metric needs its minimum size, and the pair's
// predicted memory (both decodes plus the metric's working set) must fit
// the memory budget, else that metric's row is an error matching
// zenmetrics.ErrOutOfMemory and the batch goes on. It sends the error rows
// itself and returns the metrics left to score (none: the pair is done),
// the working-set bytes to hold while they run, and the two files'
// decoding peaks.
func (p *pipeline) precheck(w work) (left []zenmetrics.Metric, ws, refNeed, distNeed int64) {
	rh, err := p.probeRef(w.pair.RefPath)
	if err != nil {
		p.errorRows(w, "", err)
		return nil, 0, 0, 0
	}
	dh, err := p.cfg.Probe(w.pair.DistPath)
	if err != nil {
		p.errorRows(w, "", err)
		return nil, 0, 0, 0
	}
	if rh.Width != dh.Width || rh.Height != dh.Height {
		p.errorRows(w, "", &zenmetrics.InputError{Path: w.pair.DistPath, Err: &zenmetrics.SizeMismatchError{
			RefWidth: rh.Width, RefHeight: rh.Height, DistWidth: dh.Width, DistHeight: dh.Height}})
		return nil, 0, 0, 0
	}
	// Decoding peaks (decoder images, converted images, file bytes) and
	// scoring (the decoded pair plus the metric's working set) come one
	// after the other: the pair needs the larger of the two.
	decode := rh.DecodeBytes + dh.DecodeBytes
	for _, m := range w.metrics {
		var err error
		need := decode
		var extra int64 // scoring memory beyond the decoded pair
		if err = cpu.CheckSize(m, rh.Width, rh.Height); err == nil && p.cfg.WorkingSet != nil {
			if n, ok := p.cfg.WorkingSet(m, rh.Width, rh.Height); ok {
				need = max(need, n)
				extra = max(0, n-2*int64(rh.Width)*int64(rh.Height)*workingSetBpp)
			}
		}
		if err == nil && p.cfg.MemoryBudget > 0 && need > p.cfg.MemoryBudget {
			err = &zenmetrics.OutOfMemoryError{Backend: "batch", Requested: need, Free: p.cfg.MemoryBudget,
				Detail: fmt.Sprintf("a %d×%d pair needs about %d MiB to decode and score %v, more than the memory budget of %d MiB "+
					"(raise --mem-budget if the machine has the memory)",
					rh.Width, rh.Height, need>>20, m, p.cfg.MemoryBudget>>20)}
		}
		if err != nil {
			p.send(Row{ID: w.pair.ID, Ref: w.pair.Ref, Dist: w.pair.Dist, Metric: m.String(), Error: err.Error()})
			continue
		}
		left = append(left, m)
		ws += extra
	}
	return left, ws, rh.DecodeBytes, dh.DecodeBytes
}
