#!/usr/bin/env bash
# Times our CPU reference against libjxl's own tools on the same PNG pair,
# side by side in one run, both pinned to one core (taskset -c 0) and
# including process start and PNG decoding (the libjxl tools decode inside
# their timed run too). Prints the median of N runs of each, interleaved.
#
# usage: LIBJXL_BIN=/path/to/libjxl/build/tools scripts/bench/cpu_vs_libjxl.sh REF DIST [N]
# LIBJXL_BIN must hold ssimulacra2 and butteraugli_main (built by you; this
# repository does not build or ship libjxl).
set -euo pipefail
ref=$1 dist=$2 n=${3:-5}
bin=${LIBJXL_BIN:?set LIBJXL_BIN to the folder with ssimulacra2 and butteraugli_main}
cd "$(dirname "$0")/../.."
zm=$(mktemp -d)/zmscore
CGO_ENABLED=0 go build -o "$zm" ./cmd/zmscore
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A t
for i in $(seq "$n"); do
  t[s2_jxl]+="$(ms taskset -c 0 "$bin/ssimulacra2" "$ref" "$dist") "
  t[s2_zm]+="$(GOMAXPROCS=1 ms taskset -c 0 "$zm" --backend cpu --threads 1 "$ref" "$dist") "
  t[ba_jxl]+="$(ms taskset -c 0 "$bin/butteraugli_main" "$ref" "$dist") "
  t[ba_zm]+="$(GOMAXPROCS=1 ms taskset -c 0 "$zm" --backend cpu --threads 1 --metric butteraugli "$ref" "$dist") "
done
echo "pair: $ref vs $dist ($n runs each, interleaved, one core)"
printf '| metric | libjxl tool ms | zenmetrics cpu ms | ratio |\n|---|---|---|---|\n'
for m in s2 ba; do
  a=$(tr ' ' '\n' <<<"${t[${m}_jxl]}" | grep . | median); b=$(tr ' ' '\n' <<<"${t[${m}_zm]}" | grep . | median)
  printf '| %s | %d | %d | %.2f× |\n' "$([ $m = s2 ] && echo SSIMULACRA2 || echo Butteraugli)" "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
echo "scores: ssimulacra2 $("$bin/ssimulacra2" "$ref" "$dist") / ours $("$zm" --backend cpu "$ref" "$dist");" \
  "butteraugli $("$bin/butteraugli_main" "$ref" "$dist" | head -1) / ours $("$zm" --backend cpu --metric butteraugli "$ref" "$dist")"
