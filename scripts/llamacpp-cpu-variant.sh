#!/usr/bin/env bash
# A copy of node-llama-cpp's install that can load only one of its CPU builds, so llama.cpp runs e.g. its AVX2 path
# on a host with AVX-512 (a like-for-like peer for chat's CHAT_KERNELS=avx2; BENCHMARKS.md).
#
# usage: scripts/llamacpp-cpu-variant.sh VARIANT DEST
#   VARIANT: a libggml-cpu-VARIANT.so of bins/linux-x64 (haswell = AVX2+FMA+F16C, no AVX-512; sse42; x64; ...).
#   Copies the install (CHAT_BENCH_CACHE, default ~/.cache/chat-bench/llamacpp, as ../shared/bench/llamacpp.sh
#   uses; it is not changed) to DEST, deletes every other libggml-cpu-*.so there, then loads llama.cpp from DEST and
#   prints the CPU library it mapped and its system info line. Exits 1 if that library is not VARIANT's.
# Then: CHAT_BENCH_CACHE=DEST ../shared/bench/llamacpp.sh MODEL THREADS NGEN PROMPT_TOKENS
set -euo pipefail

[ $# -eq 2 ] || { sed -n '5,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
variant="$1" dest="$2"
src="${CHAT_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chat-bench/llamacpp}"
bins=node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
die() { echo "llamacpp-cpu-variant.sh: $*" >&2; exit 1; }

[ -f "$src/$bins/libggml-cpu-$variant.so" ] || die "no $src/$bins/libggml-cpu-$variant.so (install with ../shared/bench/llamacpp.sh --install)"
[ ! -e "$dest" ] || [ "$(cd "$dest" && pwd)" != "$(cd "$src" && pwd)" ] || die "DEST is the install itself"
rm -rf "$dest"
cp -a "$src" "$dest"
for f in "$dest/$bins"/libggml-cpu-*.so; do
  [ "$(basename "$f")" = "libggml-cpu-$variant.so" ] || rm "$f"
done

# Which CPU library llama.cpp loads from DEST, and the features it was built with. A script file in DEST, so that
# "node-llama-cpp" resolves there (and node -e would break the binding test, which re-runs node with our flags).
cat >"$dest/cpu-variant.mjs" <<'JS'
import fs from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error, logger: () => {}});
const libs = new Set(fs.readFileSync("/proc/self/maps", "utf8").split("\n")
  .filter(l => l.includes("libggml-cpu")).map(l => l.split(/\s+/).pop()));
console.log("loaded: " + [...libs].join(" "));
console.log("system info: " + llama.systemInfo.trim());
JS
info="$(node "$dest/cpu-variant.mjs" 2>&1)" || die "llama.cpp failed to load from $dest: $info"
echo "$info" >&2
grep -q "^loaded: .*/libggml-cpu-$variant\.so$" <<<"$info" || die "llama.cpp did not load libggml-cpu-$variant.so from $dest"
echo "$dest"
