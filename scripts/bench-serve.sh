#!/usr/bin/env bash
# chat serve under load, in one run (ratios are what to compare; the
# machine is shared): one client, then C clients, then C clients while one
# more keeps sending a long prompt (chunked prefill); the server has a place
# for each client (--parallel C+1). Prints the three JSON
# lines of `chat bench serve` and one summary line.
#
#   scripts/bench-serve.sh MODEL.gguf [SERVE FLAGS...]
#
# N (64) tokens per reply, C (16) clients, LONG (3800) characters of
# TinyStories text for the long prompt (about 1,000 tokens with Llama's
# tokenizer and the chat template; a new prompt each time, so every one is
# prefilled); ONE (100) requests of the lone client and WAVES (8) requests
# per client under load, so that each p99 (nearest rank) is taken over 100
# to 128 first tokens and is not simply the slowest one.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:?usage: scripts/bench-serve.sh MODEL.gguf [serve flags]}
shift
N=${N:-64} C=${C:-16} LONG=${LONG:-3800} ONE=${ONE:-100} WAVES=${WAVES:-8}
BIN=$(mktemp -d /tmp/chat-bench-serve.XXXXXX)/chat
go build -o "$BIN" .
PORT=$((20000 + $$ % 20000))
URL=http://127.0.0.1:$PORT
"$BIN" serve "$MODEL" --addr "127.0.0.1:$PORT" --parallel $((C + 1)) "$@" 2>"$BIN.log" &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for ((i = 0; i < 300; i++)); do
	grep -q 'on http://' "$BIN.log" && break
	sleep 0.1
done
cat "$BIN.log" >&2
"$BIN" bench serve --url "$URL" --concurrency 1 --requests 2 --max-tokens 8 >/dev/null # warm-up
one=$("$BIN" bench serve --url "$URL" --concurrency 1 --requests "$ONE" --max-tokens "$N")
many=$("$BIN" bench serve --url "$URL" --concurrency "$C" --requests $((WAVES * C)) --max-tokens "$N")
loaded=$("$BIN" bench serve --url "$URL" --concurrency "$C" --requests $((WAVES * C)) --max-tokens "$N" --long-prompt-chars "$LONG")
echo "$one"
echo "$many"
echo "$loaded"
jq -cn --argjson one "$one" --argjson many "$many" --argjson loaded "$loaded" '{
	clients: $many.concurrency, max_tokens: $one.max_tokens,
	tok_s_1: $one.tok_s, tok_s_n: $many.tok_s, throughput_ratio: ($many.tok_s / $one.tok_s),
	ttft_ms_p99_idle: $one.ttft_ms_p99, ttft_ms_p99_loaded: $many.ttft_ms_p99, ttft_ms_p99_loaded_long: $loaded.ttft_ms_p99,
	ttft_ratio: ($loaded.ttft_ms_p99 / $one.ttft_ms_p99), ttft_ratio_long_vs_loaded: ($loaded.ttft_ms_p99 / $many.ttft_ms_p99),
	itl_ms_p50_loaded: $many.itl_ms_p50, itl_ms_p50_loaded_long: $loaded.itl_ms_p50, long_prompt_tokens: $loaded.long_prompt_tokens,
	long_requests: $loaded.long_requests}'
