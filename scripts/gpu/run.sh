#!/usr/bin/env bash
# Runs on the lent NVIDIA machine (from the repository root, with .gpu/
# carried): unpacks the Vulkan loader and Dawn, runs the GPU test binaries
# and the benchmark program, and leaves logs and JSON under $OUT.
#
# usage: scripts/gpu/run.sh [tests|bench|probe|all] [extra args for zmbench]
set -uo pipefail
cd "$(dirname "$0")/../.."
what="${1:-all}"; shift || true
OUT="${OUT:-/tmp/zm-out}"; mkdir -p "$OUT"
for f in .gpu/main/debs/*.deb; do dpkg -x "$f" /; done; ldconfig
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && [ -z "${VK_DRIVER_FILES:-}" ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
mkdir -p /tmp/zm && gunzip -c .gpu/main/libwebgpu_wrapper.so.gz > /tmp/zm/libwebgpu_wrapper.so
for f in .gpu/main/bin/*.gz; do gunzip -c "$f" > "/tmp/zm/$(basename "${f%.gz}")"; chmod +x "/tmp/zm/$(basename "${f%.gz}")"; done
export ZENMETRICS_WEBGPU_LIB=/tmp/zm/libwebgpu_wrapper.so ZENMETRICS_SHARED="$PWD/.gpu/main/shared" CI=true
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv | tee "$OUT/gpu.txt"
rc=0
if [ "$what" = probe ] || [ "$what" = all ]; then
  [ -x /tmp/zm/zmprobe ] && /tmp/zm/zmprobe > "$OUT/probe.json" 2> "$OUT/probe.err"; echo "probe rc=$?"
fi
if [ "$what" = tests ] || [ "$what" = all ]; then
  for t in /tmp/zm/*.test; do
    name=$(basename "$t" .test)
    dir=${name//_//}
    echo "=== $name"
    (cd "$dir" 2>/dev/null || cd .; "$t" -test.v -test.timeout 300s ${TESTRUN:+-test.run "$TESTRUN"}) > "$OUT/test_$name.log" 2>&1
    r=$?; [ $r -ne 0 ] && rc=$r
    grep -E '^(--- FAIL|FAIL|PASS|ok)' "$OUT/test_$name.log" | tail -5
    grep -E 'parity|max' "$OUT/test_$name.log" | head -20
  done
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  [ -x /tmp/zm/zmbench ] && /tmp/zm/zmbench --json "$OUT/bench.json" "$@" 2>&1 | tee "$OUT/bench.txt"
fi
exit $rc
