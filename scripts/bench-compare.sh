#!/usr/bin/env bash
# Speed of chat against llama.cpp on the same GGUF files, as a markdown table (the command BENCHMARKS.md cites).
#
# usage: scripts/bench-compare.sh [MODEL...]
#   MODEL is stories260K, bench15M-f32, bench15M-q8_0, bench110M-f32 or bench110M-q8_0 (default: all five).
#   For each model and each thread count in THREADS, runs
#     ../shared/bench/compare.sh -n RUNS 'llamacpp.sh M T NGEN NPROMPT' 'chat bench --model M --threads T ...'
#   (alternating A B A B ..., medians) and prints one table row. llama.cpp is A, chat is B; the "chat/llama.cpp"
#   columns are median chat tok/s over median llama.cpp tok/s, so > 1 means chat is faster.
#   chat is built once (go build) into a temp folder from the current work tree.
#   stories260K comes from ../shared/models; the bench* files from BM, written there with
#   ../shared/bench/make-bench-models.sh when missing (about 600 MB, outside the repo).
# env: RUNS (5), THREADS ("1 2"), NGEN (128), NPROMPT (128), BM (../bench-models next to the repo),
#      SHARED (../shared next to the repo), LOG (compare.sh's progress; default a temp file, named at the end).
# Check the load first (uptime): 2-thread numbers mean little on a busy 2-vCPU machine (../shared/bench/README.md).
# Duration: RUNS=1 over all five models and both thread counts took 13 minutes on a busy 2-vCPU machine (mostly
# llama.cpp at 2 threads and the 110M models); the default RUNS=5 takes about five times as long.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shared="$(cd "${SHARED:-$repo/../shared}" && pwd)"
bm="${BM:-$repo/../bench-models}"
runs="${RUNS:-5}" threads="${THREADS:-1 2}" ngen="${NGEN:-128}" nprompt="${NPROMPT:-128}"
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(stories260K bench15M-f32 bench15M-q8_0 bench110M-f32 bench110M-q8_0)
die() { echo "bench-compare.sh: $*" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
log="${LOG:-$(mktemp "${TMPDIR:-/tmp}/bench-compare.XXXXXX.log")}"
(cd "$repo" && go build -o "$tmp/chat" .) || die "go build failed"

path_of() {
  case "$1" in
    stories260K) echo "$shared/models/stories260K/stories260K.gguf" ;;
    bench15M-f32 | bench15M-q8_0 | bench110M-f32 | bench110M-q8_0)
      if [ ! -f "$bm/$1.gguf" ]; then
        echo "bench-compare.sh: writing $bm/$1.gguf with make-bench-models.sh" >&2
        "$shared/bench/make-bench-models.sh" "$bm" "$1" >&2 || die "make-bench-models.sh failed"
      fi
      echo "$(cd "$bm" && pwd)/$1.gguf" ;;
    *) die "unknown model $1 (stories260K, bench15M-f32, bench15M-q8_0, bench110M-f32, bench110M-q8_0)" ;;
  esac
}

field() { sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\(-\{0,1\}[0-9][0-9.eE+-]*\).*/\1/p" <<<"$2" | head -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'; }

echo "chat $(cd "$repo" && git rev-parse --short HEAD)$(cd "$repo" && git diff --quiet HEAD -- . 2>/dev/null || echo "+dirty") vs llama.cpp (node-llama-cpp 3.21.1), P=$nprompt N=$ngen, median of $runs alternating runs, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs"
echo
echo "| model | threads | load | llama.cpp pp tok/s | chat pp tok/s | pp chat/llama.cpp | llama.cpp tg tok/s | chat tg tok/s | tg chat/llama.cpp |"
echo "|---|---|---|---|---|---|---|---|---|"
for m in "${models[@]}"; do
  f="$(path_of "$m")"
  [ -f "$f" ] || die "model file not found: $f"
  for t in $threads; do
    load="$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?")"
    a="$shared/bench/llamacpp.sh '$f' $t $ngen $nprompt"
    b="CHAT_SHARED_MODELS='$shared/models' '$tmp/chat' bench --model '$f' --threads $t --gen $ngen --prompt-tokens $nprompt"
    echo "== $m threads=$t" >>"$log"
    out="$("$shared/bench/compare.sh" -n "$runs" "$a" "$b" 2>>"$log")" || die "compare.sh failed for $m threads=$t (see $log)"
    printf '%s\n' "$out" >>"$log"
    j="$(tail -n 1 <<<"$out")"
    apart="${j#*\"a\":}" bpart="${j#*\"b\":}"
    apart="${apart%%\"b\":*}" bpart="${bpart%%\"pp_ratio*}"
    app="$(field pp_tok_s "$apart")" atg="$(field tg_tok_s "$apart")"
    bpp="$(field pp_tok_s "$bpart")" btg="$(field tg_tok_s "$bpart")"
    echo "| $m | $t | $load | $app | $bpp | $(ratio "$bpp" "$app") | $atg | $btg | $(ratio "$btg" "$atg") |"
  done
done
echo
echo "(compare.sh output and every run's JSON line: $log)"
