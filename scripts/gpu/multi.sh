#!/usr/bin/env bash
# Issue #19's whole measurement in one device call, on a machine with two
# GPUs (lent kind nvidia-h200-x2), from the repository root with .gpu/main
# carried (pack it with `scripts/gpu/pack.sh small`: the full pack builds
# mkpairs too):
#   1. scripts/gpu/run.sh probe tests: zmprobe (every adapter) and the GPU
#      test binaries, logs in $OUT/run/;
#   2. large pairs made on the machine by mkpairs (corpus photos scaled to
#      4 and 16 MP, BATCH_REPEAT listings each), then the batch with
#      SSIMULACRA2 and Butteraugli on one GPU (--gpus 0) and on two under
#      each strategy: rows/s and each device's share of the tasks;
#   3. the same at 16 MP with GPU 1 kept busy by a second process, adaptive
#      against round-robin, to show the adaptive strategy moving work.
# Everything lands in $OUT/multi.txt (summary) and $OUT/multi.tgz (logs).
#
# GPU ordinals (--gpus) are WebGPU adapter i and CUDA device i. Dawn's C
# API hands out one adapter per kind, so a host with two equal GPUs has one
# WebGPU adapter (the first GPU: step 0 below checks which one by its
# memory) and both GPUs through CUDA; only the metrics with CUDA kernels
# (SSIMULACRA2) can use the second GPU. METRIC_SETS picks the batches'
# metric lists (default "ssim2 ssim2,butteraugli": two sets of batches).
#
# usage: BATCH_REPEAT=5 scripts/gpu/multi.sh
# MULTI_SKIP_RUN=1 skips step 1 (when run.sh already ran in this call and
# unpacked the binaries); BATCH_LIMIT=S stops any one batch after S seconds
# (default 60) so the whole call stays inside the device's command limit;
# MULTI_SIZES="4 16" picks the sizes; LOADERS=n processes load GPU 1 in
# step 3 (default 4; 0 skips step 3), LOADED_SETS its metric lists (default ssim2);
# MULTI_SKIP_WEBGPU=1 skips step 0 (which GPU is WebGPU's) when known;
# MKPAIRS_ARGS passes flags to mkpairs (-ppm: binary PPM inputs, which
# decode in one read, for batches that stored PNGs leave decode-bound).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
OUT="${OUT:-/tmp/zm-out}"; mkdir -p "$OUT/run"
[ -n "${MULTI_SKIP_RUN:-}" ] || OUT="$OUT/run" scripts/gpu/run.sh probe tests
B=/tmp/zm   # run.sh unpacked the binaries and Dawn there
export ZENMETRICS_WEBGPU_LIB=$B/libwebgpu_wrapper.so
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && [ -z "${VK_DRIVER_FILES:-}" ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
M=/tmp/zmmulti; rm -rf "$M"; mkdir -p "$M"
S="$M/multi.txt"
say() { echo "$*" | tee -a "$S"; }
say "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tr '\n' ';')"
say "adapters: $($B/zmprobe 2>/dev/null | grep -o '"name": *"[^"]*"' | head -6 | tr '\n' ' ')"
scores="$root/.gpu/main/shared/corpus/scores.tsv"
rep=${BATCH_REPEAT:-5}

# batch NAME ARGS...: one batch run; prints the wall time and the summary's
# last lines (rows/s, the per-device table from --stats).
batch() {
  local name=$1; shift
  timeout "${BATCH_LIMIT:-60}" /usr/bin/time -f "%e s wall" $B/zmscore "$@" --out "$M/$name.jsonl" \
    --progress lines --stats > "$M/$name.txt" 2>&1
  say "-- $name rc=$? ($*)"; tail -25 "$M/$name.txt" >> "$S"; cp "$S" "$OUT/multi.txt"
}

sizes=${MULTI_SIZES:-4 16}
for mp in $sizes; do
  $B/mkpairs -scores "$scores" -mp $mp -limit 12 -repeat "$rep" ${MKPAIRS_ARGS:-} -out "$M/img$mp" > "$M/man$mp.tsv" 2> "$M/mkpairs$mp.err"
  say "pairs ${mp} MP: $(($(wc -l < "$M/man$mp.tsv") - 1)) rows (mkpairs rc=$?)"
  if [ "$mp" = "${sizes%% *}" ] && [ -z "${MULTI_SKIP_WEBGPU:-}" ]; then
    # Step 0: which GPU is the WebGPU adapter? GPU memory in use, sampled
    # while a WebGPU-only batch runs.
    nvidia-smi --query-gpu=index,memory.used --format=csv,noheader -lms 200 > "$M/mem.txt" 2>&1 & smi=$!
    batch "mp${mp}_webgpu_only" --manifest "$M/man$mp.tsv" --backend webgpu --metric ssim2
    kill $smi 2>/dev/null
    say "WebGPU adapter memory: $(awk -F', ' '{gsub(/ MiB/,"",$2); if ($2+0 > m[$1]) m[$1]=$2+0} END {for (i in m) printf "GPU %s peak %d MiB; ", i, m[i]}' "$M/mem.txt")"
  fi
  for m in ${METRIC_SETS:-ssim2 ssim2,butteraugli}; do
    batch "mp${mp}_${m/,/+}_gpu0" --manifest "$M/man$mp.tsv" --metric "$m" --gpus 0 --balance adaptive
    for s in adaptive round-robin least-loaded weighted; do
      batch "mp${mp}_${m/,/+}_gpu01_$s" --manifest "$M/man$mp.tsv" --metric "$m" --gpus 0,1 --balance $s
    done
  done
done

# GPU 1 kept busy by another process: gpu/cuda/ssim2's two-caller 16 MP
# benchmark in a loop (cached scores back to back, no decoding, so it loads
# the GPU and not the batch's CPUs; the first call's loader, a zmscore
# batch with 4 decoders, was held by its decoders and hardly loaded GPU 1);
# CUDA_VISIBLE_DEVICES=1 makes GPU 1 that process's device 0.
if [ "${LOADERS:-4}" -gt 0 ]; then
big=$(ls "$M"/man*.tsv | sort -V | tail -1)
# LOADERS processes (default 4) keep GPU 1 busy; a host-bound batch hardly
# notices one, as the 05:22 UTC call of session 5 showed. nvidia-smi
# samples both GPUs' utilisation meanwhile, so the summary shows the load.
loaders=()
for i in $(seq 1 "${LOADERS:-4}"); do
  if [ -x $B/gpu_cuda_ssim2.test ]; then
    ( cd "$root/gpu/cuda/ssim2" && while :; do CUDA_VISIBLE_DEVICES=1 $B/gpu_cuda_ssim2.test -test.run '^$' \
        -test.bench 'BenchmarkCached2$/16MP' -test.benchtime 2000x >/dev/null 2>&1; done ) &
  else
    ( while :; do CUDA_VISIBLE_DEVICES=1 $B/zmscore --manifest "$big" --metric ssim2 --backend cuda \
        --decoders 4 --workers 4 --out "$M/load_$RANDOM.jsonl" --quiet >/dev/null 2>&1; done ) &
  fi
  loaders+=($!)
done
sleep 8
nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader -lms 500 > "$M/util.txt" 2>&1 & smi=$!
for s in adaptive round-robin; do
  for m in ${LOADED_SETS:-ssim2}; do
    batch "${m/,/+}_gpu01_${s}_gpu1loaded" --manifest "$big" --metric "$m" --gpus 0,1 --balance $s
  done
done
kill $smi 2>/dev/null
say "GPU utilisation while loaded: $(awk -F', ' '{gsub(/ %/,"",$2); n[$1]++; t[$1]+=$2} END {for (i in n) printf "GPU %s mean %.0f%% (%d samples); ", i, t[i]/n[i], n[i]}' "$M/util.txt")"
kill "${loaders[@]}" 2>/dev/null; pkill -f "$M/load_" 2>/dev/null; pkill -f 'BenchmarkCached2' 2>/dev/null; wait 2>/dev/null

fi

cp "$S" "$OUT/multi.txt"
tar czf "$OUT/multi.tgz" -C "$M" --exclude='img*' --exclude='*.jsonl' .
