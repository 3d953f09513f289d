#!/usr/bin/env bash
# Regenerate the llama.cpp fixtures in models/llama/testdata/llamacpp/.
#
# usage: scripts/llamacpp/regen.sh [NAME...]      (default: every spec in models/llama/randmodel)
#   1. go run ./scripts/llamacpp/mkmodels writes the random-weight GGUFs into a temp folder and prints a manifest
#      (name, file, sha256, input ids).
#   2. reference.mjs runs llama.cpp (node-llama-cpp 3.21.1, prebuilt CPU binaries, installed outside the repo by
#      ../shared/bench/llamacpp.sh --install) on each file: 1 thread, F32 KV, flash attention off, 64 greedy tokens.
#   3. The JSON files (llama.cpp's ids, top-5 log-probs, the sha256 of the model) go to models/llama/testdata/llamacpp/.
# Only the JSON is committed; the test regenerates each GGUF with randmodel and checks its sha256.
# env: SHARED (default ../shared next to the repo), KEEP=1 keeps the temp folder with the GGUFs.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
shared="${SHARED:-$repo/../shared}"
bench="$shared/bench/llamacpp.sh"
[ -x "$bench" ] || { echo "regen.sh: $bench not found (set SHARED=...)" >&2; exit 1; }
cache="$("$bench" --install)"

tmp="$(mktemp -d)"
if [ "${KEEP:-0}" = "1" ]; then echo "regen.sh: models kept in $tmp" >&2; else trap 'rm -rf "$tmp"' EXIT; fi

(cd "$repo" && go run ./scripts/llamacpp/mkmodels -out "$tmp/models" -vocab "$shared/models/vocab" "$@") >"$tmp/manifest.json"

# An ES module resolves "node-llama-cpp" from its own folder, so the script runs from the cache folder.
cp "$repo/scripts/llamacpp/reference.mjs" "$cache/chat_llamacpp_reference.mjs.tmp.$$"
mv "$cache/chat_llamacpp_reference.mjs.tmp.$$" "$cache/chat_llamacpp_reference.mjs"
node "$cache/chat_llamacpp_reference.mjs" "$tmp/manifest.json" "$tmp/out"

mkdir -p "$repo/models/llama/testdata/llamacpp"
cp "$tmp"/out/*.json "$repo/models/llama/testdata/llamacpp/"
echo "regen.sh: wrote $(ls "$tmp"/out/*.json | wc -l) fixtures into models/llama/testdata/llamacpp/" >&2
