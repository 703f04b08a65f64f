// Package batch scores many (reference, distorted) image pairs in one run:
// the engine behind `zmscore --manifest`, `zmscore --ref-dir/--dist-dir`
// and `zmscore merge`.
//
// It is written for corpora of 100k+ pairs scored overnight on machines that
// may die at any instant, so the output is crash-safe and resumable:
//
//   - Input is a manifest (TSV, CSV or JSONL with ref, dist and optional id
//     and metric) or two folders paired by a name pattern (see PairDirs).
//   - Output is one row per (pair, metric) in JSONL, CSV or Parquet (Row).
//   - JSONL and CSV are appended in chunks that end at a row boundary; each
//     chunk is fsynced and then its end offset is recorded in a sidecar
//     checkpoint (OUT.ckpt, replaced atomically). On resume the file is cut
//     back to the checkpoint, so a torn or uncommitted tail is dropped and
//     redone, and every row before it is known good.
//   - Parquet is produced from such a crash-safe JSONL journal
//     (OUT.journal.jsonl): at the end of a run (and at the end of a resumed
//     run) the previous Parquet file, if any, and the journal are merged,
//     deduplicated by (id, metric), written to a temporary file, fsynced and
//     renamed over OUT. OUT is therefore always either absent or a complete
//     Parquet file.
//   - With Resume, rows already present are keyed by (id, metric) and
//     skipped, so a run killed at any moment and rerun produces exactly one
//     row per (pair, metric).
//   - A missing, corrupt or mismatched file gives an error row and the run
//     goes on. Exit codes of CLI: 0 all ok, 3 some rows failed, 2 usage, 1
//     fatal.
//   - Scoring goes through the Engine interface. NewBackendEngine adapts any
//     zenmetrics.Backend with a worker pool and a cache of prepared
//     references, so one reference with many variants is prepared once.
//     Decoding runs on its own goroutines (one per CPU by default) ahead
//     of scoring, bounded by a byte budget for decoded images in flight;
//     each reference is decoded once for all its pairs.
//   - Summary.Stages splits a run's time into decode, prepare, score and
//     write, with the queue waits that tell a decode-bound run from a
//     score-bound one (PrintStages; `zmscore --stats`).
//   - --shard i/n (or Kubernetes Indexed Job / Slurm array variables)
//     partitions pairs deterministically by a hash of the pair id; merge
//     combines shard outputs and reports missing and duplicate rows.
package batch
