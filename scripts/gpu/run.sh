#!/usr/bin/env bash
# Runs on the lent NVIDIA machine (from the repository root, with .gpu/main
# carried, packed by scripts/gpu/pack.sh): unpacks the Vulkan loader, glvnd
# and Dawn, then runs the probe, the GPU test binaries and the benchmarks.
# Logs go to /tmp/zmout; $OUT gets summary.txt and results.tgz (the device
# returns at most 8 files).
#
# usage: scripts/gpu/run.sh [STEP...]   steps: probe tests bench cuda strips cached batch warm (default: all)
# (bench: zmbench for ssim2, butteraugli and dssim at 1/4/16 MP, and IW-SSIM's and zensim's package
# benchmarks; BENCH="zensim iwssim" limits it to those; cuda: gpu/cuda/ssim2's package benchmarks
# (CUDA_PKG=dssim, cvvdp, ... another CUDA package's), and those of a binary named
# gpu_cuda_ssim2.old (gpu_cuda_$CUDA_PKG.old) beside it, if packed, alternated, for a before/after)
# summary.txt is written into $OUT line by line, so a run stopped by a time limit still reports.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(probe tests bench cuda strips cached batch warm)
has() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
OUT="${OUT:-/tmp/zm-out}"; mkdir -p "$OUT"
R=/tmp/zmout; rm -rf "$R"; mkdir -p "$R"; : > "$OUT/summary.txt"
for f in .gpu/main/debs/*.deb; do dpkg -x "$f" /; done; ldconfig
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && [ -z "${VK_DRIVER_FILES:-}" ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
B=/tmp/zm; mkdir -p $B && gunzip -c .gpu/main/libwebgpu_wrapper.so.gz > $B/libwebgpu_wrapper.so
for f in .gpu/main/bin/*.gz; do n=$(basename "${f%.gz}"); gunzip -c "$f" > "$B/$n"; chmod +x "$B/$n"; done
# ZENMETRICS_REQUIRE_CUDA=1: the CUDA tests (gpu/cuda/...) fail instead of skipping without a device.
export ZENMETRICS_WEBGPU_LIB=$B/libwebgpu_wrapper.so ZENMETRICS_SHARED="$root/.gpu/main/shared" CI=true ZENMETRICS_REQUIRE_CUDA=1
summary() { echo "$*" | tee -a "$R/summary.txt" "$OUT/summary.txt"; }
bench_on() { [[ " ${BENCH:-ssim2 butteraugli dssim iwssim zensim cvvdp} " == *" $1 "* ]]; }
summary "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
rc=0

if has probe; then
  $B/zmprobe > "$R/probe.json" 2> "$R/probe.err"; summary "probe rc=$?"
  grep -o '"name": *"[^"]*"\|"f32_atomics": *"[^"]*"\|"f16": *"[^"]*"\|"subgroups": *"[^"]*"\|"timestamp_query": *"[^"]*"' "$R/probe.json" | head -12 | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
fi

if has tests; then
  for t in $B/*.test; do
    name=$(basename "$t" .test); dir=${name//_//}
    (cd "$root/$dir" && "$t" -test.v -test.timeout 500s ${TESTRUN:+-test.run "$TESTRUN"}) > "$R/test_$name.log" 2>&1
    r=$?; [ $r -ne 0 ] && rc=$r
    summary "test $name rc=$r: $(grep -c '^--- PASS' "$R/test_$name.log") pass, $(grep -c '^--- FAIL' "$R/test_$name.log") fail, $(grep -c '^--- SKIP' "$R/test_$name.log") skip"
    grep -E '^--- FAIL' "$R/test_$name.log" | head -10 | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
    grep -iE 'parity|max \|Δ\||max rel|worst' "$R/test_$name.log" | head -12 | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
  done
fi

if has bench; then
  for m in ssim2 butteraugli dssim; do
    bench_on $m || continue
    $B/zmbench -metric $m -sizes 1,4,16 -reps 30 -json "$R/bench_$m.json" > "$R/bench_$m.txt" 2>&1; summary "zmbench $m rc=$?"
    cat "$R/bench_$m.txt" | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
  done
  bench_on ssim2 && $B/zmbench -metric ssim2 -sizes 16 -reps 10 -profile > "$R/bench_ssim2_profile.txt" 2>&1
  # IW-SSIM has no zmbench mode yet: its package benchmark (1 and 16 MP, cached reference).
  if bench_on iwssim && [ -x $B/gpu_webgpu_iwssim.test ]; then
    (cd "$root/gpu/webgpu/iwssim" && $B/gpu_webgpu_iwssim.test -test.run '^$' -test.bench 'IWSSIMCached' -test.benchtime 30x -test.count 3) > "$R/bench_iwssim.txt" 2>&1
    summary "iwssim bench rc=$?"; grep -E '^Benchmark' "$R/bench_iwssim.txt" | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
  fi
  # zensim likewise (1 and 16 MP, cached reference; target ≤ 10 ms per 16 MP).
  # ColorVideoVDP likewise (0.25, 1 and 16.8 MP cached; target ≤ 15 ms at 16.8 MP).
  if bench_on cvvdp && [ -x $B/gpu_webgpu_cvvdp.test ]; then
    (cd "$root/gpu/webgpu/cvvdp" && $B/gpu_webgpu_cvvdp.test -test.run '^$' -test.bench 'CVVDP(Cached|Prepare)' -test.benchtime 20x -test.count 2) > "$R/bench_cvvdp.txt" 2>&1
    summary "cvvdp bench rc=$?"; grep -E '^Benchmark' "$R/bench_cvvdp.txt" | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
  fi
  # A binary named gpu_webgpu_zensim.old beside it (an earlier commit's) is
  # benched in turn with it, for a before/after in one call.
  if bench_on zensim && [ -x $B/gpu_webgpu_zensim.test ]; then
    for t in $B/gpu_webgpu_zensim.test $B/gpu_webgpu_zensim.old $B/gpu_webgpu_zensim.test; do
      [ -x "$t" ] || continue
      (cd "$root/gpu/webgpu/zensim" && "$t" -test.run '^$' -test.bench 'ZensimCached' -test.benchtime 30x -test.count 2) > "$R/bench_zensim.txt" 2>&1
      summary "zensim bench $(basename "$t") rc=$?"; grep -E '^Benchmark|ms' "$R/bench_zensim.txt" | head -20 | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
    done
  fi
fi

cpkg=${CUDA_PKG:-ssim2}
if has cuda && [ -x $B/gpu_cuda_$cpkg.test ]; then
  bins=($B/gpu_cuda_$cpkg.test); [ -x $B/gpu_cuda_$cpkg.old ] && bins+=($B/gpu_cuda_$cpkg.old)
  for k in 1 2; do
    for t in "${bins[@]}"; do
      (cd "$root/gpu/cuda/$cpkg" && "$t" -test.run '^$' -test.bench "${CUDA_BENCH:-^Benchmark(Cached|Cached2|OneShot)$}" -test.benchtime 30x) > "$R/cuda_${k}_$(basename "$t").txt" 2>&1
      summary "cuda bench $(basename "$t") round $k rc=$?"; grep -E '^Benchmark' "$R/cuda_${k}_$(basename "$t").txt" | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
    done
  done
fi

if has strips; then
  for m in ssim2 butteraugli; do
    $B/zmbench -strips -strip-metric $m -sizes 16,64 -reps 5 -warmup 1 -vram-budget-mib 2048 -json "$R/strips_$m.json" > "$R/strips_$m.txt" 2>&1
    summary "zmbench -strips $m rc=$?"; cat "$R/strips_$m.txt" | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
  done
fi

if has cached && [ -x $B/orchestrator.test ]; then
  (cd "$root/orchestrator" && $B/orchestrator.test -test.run '^$' -test.bench 'CachedReferenceGPU' -test.benchtime 1x) > "$R/cached.txt" 2>&1
  summary "cached-reference benchmark rc=$?"; grep -E '^Benchmark' "$R/cached.txt" | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
fi

if has batch && [ -d "$root/.gpu/main/shared/corpus/images" ]; then
  # BATCH_REPEAT=k lists every pair k times (distinct ids), so that one-time
  # costs (pipeline compilation, the GPU's clock ramp) weigh less.
  man="$R/manifest.tsv"; printf 'id\tref\tdist\n' > "$man"
  for k in $(seq 1 "${BATCH_REPEAT:-1}"); do
    tail -n +2 "$root/.gpu/main/shared/corpus/scores.tsv" | awk -F'\t' -v d="$root/.gpu/main/shared/corpus/" -v k="$k" '{print "r" k "-" NR "\t" d $1 "\t" d $2}' >> "$man"
  done
  for be in cpu auto; do
    /usr/bin/time -f "%e s wall" $B/zmscore --manifest "$man" --metric ssim2,butteraugli --backend $be \
      --out "$R/batch_$be.jsonl" --progress lines --stats > "$R/batch_$be.txt" 2>&1
    summary "batch backend=$be rc=$?"; tail -15 "$R/batch_$be.txt" | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
  done
fi

if has warm; then
  /usr/bin/time -f "%e s wall" $B/zmwarm --force --cache-dir "$R/cache" > "$R/zmwarm.txt" 2>&1
  summary "zmwarm --force rc=$?"; cat "$R/zmwarm.txt" | tee -a "$OUT/summary.txt" >> "$R/summary.txt"
fi

tar czf "$OUT/results.tgz" -C "$R" .
exit $rc
