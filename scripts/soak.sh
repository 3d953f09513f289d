#!/usr/bin/env bash
# Soak: random mutants of every input family (GGUF and .pt models, saved
# sessions, config files, KV cache files) through the app's own loading
# paths, one process per family; each reports panics, hangs (an input still
# running after 5 s) and the process's peak RSS (issue 16; README,
# RELIABILITY). Not part of go test: it takes minutes.
#
#   scripts/soak.sh [N] [SEED]      # N mutants per family, default 10000
#
# Seeds for the model families come from ../shared/models (stories260K,
# course/tiny-gqa.pt, course/tiny-classic.pt) plus a generated GGUF with a
# chat template. Failing inputs are kept in $SOAK_OUT (default a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
n="${1:-10000}"
seed="${2:-1}"
out="${SOAK_OUT:-$(mktemp -d -t soak-XXXXXX)}"
bin="$out/soak"
go build -o "$bin" ./scripts/soak
status=0
for family in gguf pt session config kv; do
	if ! "$bin" -family "$family" -n "$n" -seed "$seed" -out "$out/$family" | grep -v '^$' | tail -n 20; then
		echo "soak: $family FAILED (exit ${PIPESTATUS[0]}; the input is in $out/$family/current)"
		status=1
	fi
done
echo "soak: inputs that failed, if any, are in $out"
exit $status
