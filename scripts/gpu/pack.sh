#!/usr/bin/env bash
# Packs what a run on the lent NVIDIA machine needs into .gpu/main/ (git-ignored;
# carry ".gpu/main" in the device call):
# CGO_ENABLED=0 binaries and test binaries, the Dawn library, Debian's Vulkan
# loader (.deb, unpacked there by run.sh) and a subset of ../shared (the
# device call carries at most 64 MiB, the corpus is ~100 MB, so it goes over
# in groups).
#
# usage: scripts/gpu/pack.sh [GROUP...]
#   groups: small (astronaut camera coffee tulips_alpha), brushes, dandelions,
#           flower, none. Default: small.
set -euo pipefail
cd "$(dirname "$0")/../.."
groups=("${@:-small}")
dawn="${ZENMETRICS_WEBGPU_LIB:-.tools/libwebgpu_wrapper.so}"
[ -f "$dawn" ] || { echo "no Dawn library at $dawn (set ZENMETRICS_WEBGPU_LIB)"; exit 1; }

rm -rf .gpu/main && mkdir -p .gpu/main/bin .gpu/main/debs .gpu/main/shared/corpus/images /tmp/amd64/partial
ex=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$ex")"; grep -qx '/.gpu/' "$ex" 2>/dev/null || echo /.gpu/ >> "$ex"

o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
if ! ls /tmp/amd64/*Packages* >/dev/null 2>&1; then apt-get $o update -qq; fi
# Dawn reaches the NVIDIA Vulkan driver through the loader and glvnd's EGL
# (seen on the lent H100/H200): carry both.
(cd .gpu/main/debs && apt-get $o download -qq libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 2>/dev/null)
gzip -c "$dawn" > .gpu/main/libwebgpu_wrapper.so.gz

export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
# LEAN=1: only the WebGPU test binaries (the device runtime and each
# metric's package: corpus parity calls for the large photo groups, which
# do not fit one call together with everything else).
if [ -n "${LEAN:-}" ]; then pkgs="./gpu/webgpu/..."; else
  go build -trimpath -ldflags=-s -o .gpu/main/bin/ ./cmd/... ./scripts/gpu/mkpairs
  pkgs="./gpu/... ./capability/... ./orchestrator/..."
fi
for pkg in $(go list $pkgs); do
  if [ -n "$(go list -f '{{join .TestGoFiles ""}}{{join .XTestGoFiles ""}}' "$pkg")" ]; then
    go test -c -trimpath -o ".gpu/main/bin/$(echo "${pkg#github.com/zenmetrics-go/zenmetrics/}" | tr / _).test" "$pkg"
  fi
done
gzip -f .gpu/main/bin/*

src=../shared
pat=()
for g in "${groups[@]}"; do
  case "$g" in
    small) pat+=(astronaut camera coffee tulips_alpha) ;;
    brushes|dandelions|flower) pat+=("$g") ;;
    none) ;;
    *) echo "unknown group $g"; exit 2 ;;
  esac
done
for p in "${pat[@]}"; do cp "$src"/corpus/images/"${p}"__*.png .gpu/main/shared/corpus/images/; done
# Keep only the score rows whose images travel, so corpus tests see a
# consistent (smaller) corpus.
for f in scores.tsv scores_dssim.tsv scores_cvvdp_iwssim.tsv; do
  [ -f "$src/corpus/$f" ] || continue
  awk -F'\t' -v list="${pat[*]}" 'BEGIN{n=split(list,a," "); for(i=1;i<=n;i++) keep["images/" a[i] "__ref.png"]=1}
    NR==1 || ($1 in keep)' "$src/corpus/$f" > ".gpu/main/shared/corpus/$f"
done
cp -r "$src/corpus/tiny" .gpu/main/shared/corpus/
mkdir -p .gpu/main/shared/refvectors && cp -r "$src/refvectors/ssimulacra2" .gpu/main/shared/refvectors/
cp "$src"/refvectors/README.md .gpu/main/shared/refvectors/
for d in butteraugli dssim iwssim; do [ -d "$src/refvectors/$d" ] && cp -r "$src/refvectors/$d" .gpu/main/shared/refvectors/; done
cp "$src"/refvectors/*.tsv .gpu/main/shared/refvectors/ 2>/dev/null || true
du -sh .gpu/main; du -sh .gpu/main/* | sort -h | tail -5
echo "groups: ${groups[*]} ($(($(wc -l < .gpu/main/shared/corpus/scores.tsv) - 1)) corpus pairs)"
