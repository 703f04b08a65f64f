#!/usr/bin/env bash
# Packs what a run on the lent NVIDIA machine needs into .gpu/ (git-ignored):
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

rm -rf .gpu && mkdir -p .gpu/bin .gpu/debs .gpu/shared/corpus/images /tmp/amd64/partial
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo /.gpu/ >> .git/info/exclude

o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
if ! ls /tmp/amd64/*Packages* >/dev/null 2>&1; then apt-get $o update -qq; fi
(cd .gpu/debs && apt-get $o download -qq libvulkan1 2>/dev/null)
gzip -c "$dawn" > .gpu/libwebgpu_wrapper.so.gz

export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
go build -trimpath -ldflags=-s -o .gpu/bin/ ./cmd/...
for pkg in $(go list ./gpu/... ./capability/... ./orchestrator/... ./cpu/...); do
  if [ -n "$(go list -f '{{join .TestGoFiles ""}}{{join .XTestGoFiles ""}}' "$pkg")" ]; then
    go test -c -trimpath -o ".gpu/bin/$(echo "${pkg#github.com/zenmetrics-go/zenmetrics/}" | tr / _).test" "$pkg"
  fi
done
gzip -f .gpu/bin/*

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
for p in "${pat[@]}"; do cp "$src"/corpus/images/"${p}"__*.png .gpu/shared/corpus/images/; done
# Keep only the score rows whose images travel, so corpus tests see a
# consistent (smaller) corpus.
for f in scores.tsv scores_dssim.tsv scores_cvvdp_iwssim.tsv; do
  [ -f "$src/corpus/$f" ] || continue
  awk -F'\t' -v list="${pat[*]}" 'BEGIN{n=split(list,a," "); for(i=1;i<=n;i++) keep["images/" a[i] "__ref.png"]=1}
    NR==1 || ($1 in keep)' "$src/corpus/$f" > ".gpu/shared/corpus/$f"
done
cp -r "$src/corpus/tiny" .gpu/shared/corpus/
mkdir -p .gpu/shared/refvectors && cp -r "$src/refvectors/ssimulacra2" .gpu/shared/refvectors/
cp "$src"/refvectors/README.md .gpu/shared/refvectors/
[ -d "$src/refvectors/butteraugli" ] && cp -r "$src/refvectors/butteraugli" .gpu/shared/refvectors/
du -sh .gpu; du -sh .gpu/* | sort -h | tail -5
echo "groups: ${groups[*]} ($(($(wc -l < .gpu/shared/corpus/scores.tsv) - 1)) corpus pairs)"
