package capability

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// WarmConfig says where the profile lives and how to re-measure it.
type WarmConfig struct {
	Store *Store
	// Report is a fresh probe of this machine: it names the profile file
	// and is compared with the hardware the profile was measured on.
	Report *Report
	// Validity is how old a profile may be (0: DefaultCacheValidity).
	Validity time.Duration
	// Force benches even when the profile is fresh.
	Force bool
	Bench BenchConfig
	// Logger receives the warnings (corrupt or foreign profile, failed save).
	Logger *slog.Logger
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
	// InitMs, if set, records measured GPU initialisation costs by adapter
	// index where the probe left them zero.
	InitMs map[int]float64
}

// WarmResult says what Warm found and did.
type WarmResult struct {
	Profile *Profile
	Path    string
	// Benched is true when a bench ran; Reason says why.
	Benched bool
	Reason  StaleReason
	// LoadErr is why the file on disk could not be used, if it could not
	// (corrupt, other schema, other machine); it was reported as a warning.
	LoadErr error
	Bench   *BenchReport
}

// Warm returns this machine's profile, benching only when the file is
// missing, unusable or stale (or Force is set), so it is cheap enough to
// call on every start. A corrupt or foreign file is a warning and a
// re-bench, never an error. The error is non-nil only when the new profile
// could not be written (the Result still carries the measured profile, so a
// read-only cache costs a bench per start, not a failure) or ctx ended.
func Warm(ctx context.Context, cfg WarmConfig) (*WarmResult, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	store := cfg.Store
	if store == nil {
		store = &Store{}
	}
	hash := ReportHash(cfg.Report)
	path, err := store.Path(hash)
	if err != nil {
		return nil, err
	}
	res := &WarmResult{Path: path}
	old, err := store.Load(ctx, hash)
	switch {
	case err != nil && ctx.Err() != nil:
		// Interrupted while reading (the lock wait ends with ctx): not a
		// file problem to warn about and re-measure.
		return res, ctx.Err()
	case err == nil:
		res.Reason = old.Staleness(cfg.Report, now(), cfg.Validity)
	case errors.Is(err, ErrNoProfile):
		res.Reason = StaleMissing
	case IsUnusable(err):
		res.LoadErr = err
		res.Reason = StaleHardware
		if errors.Is(err, ErrCorruptProfile) || errors.Is(err, ErrSchemaMismatch) {
			res.Reason = StaleSchema
		}
		log.Warn("capability profile unusable; re-measuring", "path", path, "err", err)
	default:
		// I/O trouble (permissions, lock timeout): measure anyway, the
		// save below will report it.
		res.LoadErr = err
		res.Reason = StaleMissing
		log.Warn("capability profile unreadable; re-measuring", "path", path, "err", err)
	}
	if res.Reason == "" && !cfg.Force {
		res.Profile = old
		return res, nil
	}
	// One bench per machine at a time: a second process waits for the
	// first one's bench, then uses the profile it saved. Without the lock
	// (a read-only cache) it benches, and the save below says why it
	// could not keep the result.
	if release, lerr := store.benchLock(ctx, hash); lerr == nil {
		defer release()
		if !cfg.Force {
			if cur, err := store.Load(ctx, hash); err == nil && cur.Staleness(cfg.Report, now(), cfg.Validity) == "" {
				log.Info("capability profile benched meanwhile by another process; using it", "path", path)
				res.Profile, res.Reason, res.LoadErr = cur, "", nil
				return res, nil
			}
		}
	} else if ctx.Err() != nil {
		return res, ctx.Err()
	} else {
		log.Warn("capability bench lock not taken; benching without it", "path", path, "err", lerr)
	}
	if res.Reason != "" && old != nil {
		log.Info("capability profile stale; re-measuring", "path", path, "reason", string(res.Reason))
	}
	p := NewProfile(cfg.Report, now())
	if old != nil && res.Reason != StaleHardware && res.Reason != StaleGPUChanged {
		// Same hardware: what ran out of memory still does, unless the
		// bench below shows otherwise.
		p.DetectedAt = old.DetectedAt
		for m, mp := range old.Metrics {
			for _, c := range mp.CellsFailedOOM {
				p.RecordOOM(m, c)
			}
		}
	}
	for i, ms := range cfg.InitMs {
		if i >= 0 && i < len(p.GPUs) && p.GPUs[i].InitMs == 0 {
			p.GPUs[i].InitMs = ms
		}
	}
	bcfg := cfg.Bench
	if bcfg.Logger == nil {
		bcfg.Logger = log
	}
	if bcfg.Now == nil {
		bcfg.Now = now
	}
	rep, err := Bench(ctx, bcfg, p)
	res.Bench = rep
	res.Benched = true
	if err != nil {
		return res, fmt.Errorf("capability: bench: %w", err)
	}
	res.Profile = p
	// Merge under the lock: cells another process recorded while we
	// benched survive our write.
	err = store.Update(ctx, hash, func(cur *Profile, _ error) (*Profile, error) {
		if cur != nil {
			for m, mp := range cur.Metrics {
				for _, c := range mp.CellsFailedOOM {
					if !p.measuredAt(m, c) {
						p.RecordOOM(m, c)
					}
				}
			}
		}
		return p, nil
	})
	if err != nil {
		log.Warn("capability profile not saved", "path", path, "err", err)
		return res, fmt.Errorf("capability: save profile: %w", err)
	}
	return res, nil
}

// measuredAt reports whether this profile holds a timing for the cell,
// i.e. the cell was just shown to work.
func (p *Profile) measuredAt(m zenmetrics.Metric, c Cell) bool {
	mp := p.Metrics[m]
	if mp == nil {
		return false
	}
	_, ok := mp.NsPerPxAt[c.Pixels][c.Backend]
	return ok
}
