#!/usr/bin/env bash
# End-to-end: drive the real binary in tmux as a person would (type, wait for
# the reply, change the temperature, stop a reply with Esc, open the help,
# quit) and check the screen. Captures are left in $OUT for a human to read.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d /tmp/chat-e2e.XXXXXX)}
BIN="$OUT/chat"
SOCK="chat-e2e-$$"
go build -o "$BIN" .

t() { tmux -L "$SOCK" "$@"; }
cleanup() { t kill-server 2>/dev/null || true; }
trap cleanup EXIT

fail() {
	echo "e2e FAIL: $*" >&2
	t capture-pane -p -t chat >"$OUT/fail.txt" 2>/dev/null || true
	cat "$OUT/fail.txt" >&2 || true
	exit 1
}

# wait_for PATTERN SECONDS: poll the screen until grep -E finds PATTERN.
wait_for() {
	local pat=$1 secs=${2:-30} i
	for ((i = 0; i < secs * 10; i++)); do
		if t capture-pane -p -t chat | grep -qE -- "$pat"; then return 0; fi
		sleep 0.1
	done
	fail "timed out waiting for /$pat/"
}

snap() { t capture-pane -p -t chat >"$OUT/$1.txt"; }

# send MSG: type a message, wait until the transcript shows it (the UI is
# busy from then on) and then until the reply has finished.
send() {
	t send-keys -t chat "$1" Enter
	wait_for "^› $(printf '%s' "$1" | sed 's/[.[\*^$()+?{|]/\\&/g')" 10
	wait_for 'state +idle' 60
}

export XDG_DATA_HOME="$OUT/data" XDG_CONFIG_HOME="$OUT/config"
t new-session -d -s chat -x 100 -y 30 "$BIN --seed 7"
wait_for 'student-chat\.pt' 20
snap 01-start

send 'Tell me a story about a cat.'
snap 02-reply
grep -qE '^› Tell me a story about a cat\.' "$OUT/02-reply.txt" || fail "the user message is not in the transcript"
# The reply is a story: at least one line of text after the user message.
[ "$(grep -cE '^  [A-Z]' "$OUT/02-reply.txt")" -ge 1 ] || fail "no reply text on screen"
grep -qE 'decode +[0-9.]+ tok/s' "$OUT/02-reply.txt" || fail "no decode speed in the panel"

# F3 raises the temperature by 0.1; the panel shows it at once.
t send-keys -t chat F3
wait_for 'temperature 0\.90' 5
snap 03-temperature

# A second message, stopped with Esc while it streams.
t send-keys -t chat 'Tell me a long story about a dog.' Enter
sleep 0.3
t send-keys -t chat Escape
wait_for 'state +(stopped|idle)' 20
snap 04-stopped

# Regenerate the stopped reply (Ctrl+R) and let it finish.
t send-keys -t chat C-r
sleep 0.5 # a short reply can start and finish between two captures
wait_for 'state +idle' 60
snap 04b-regenerated

# F11 switches the weights to int8 mid-chat: the header says so.
t send-keys -t chat F11
wait_for 'student-chat\.pt · modern · int8' 20
snap 04c-int8
send 'Tell me a story about a bird.'
snap 04d-int8-turn
grep -qE 'reused +0 tok' "$OUT/04d-int8-turn.txt" || fail "the int8 turn should re-prefill the conversation"

# /format json: the next reply is JSON. The autosaved conversation holds the
# reply verbatim, and it must parse; the panel names the constraint.
t send-keys -t chat '/format json' Enter
wait_for 'replies are constrained: json' 5
send 'Describe a cat as JSON.'
snap 04e-json
grep -qE 'format +json' "$OUT/04e-json.txt" || fail "the panel does not show the constraint"
latest=$(ls -t "$XDG_DATA_HOME"/chat/sessions/*.json | head -1)
jq -r '.messages[-1].content' "$latest" >"$OUT/04e-json-reply.txt"
jq -e . "$OUT/04e-json-reply.txt" >/dev/null || fail "the /format json reply does not parse: $(cat "$OUT/04e-json-reply.txt")"
t send-keys -t chat '/format off' Enter
wait_for 'replies are free' 5

# Help overlay and back.
t send-keys -t chat F1
wait_for 'Esc' 5
snap 05-help
t send-keys -t chat Escape

# Narrow terminal: still renders.
t resize-window -t chat -x 40 -y 12
sleep 0.5
snap 06-narrow
grep -q 'student' "$OUT/06-narrow.txt" || fail "narrow screen lost the header"

t send-keys -t chat C-c
for ((i = 0; i < 50; i++)); do
	t has-session -t chat 2>/dev/null || break
	sleep 0.1
done
t has-session -t chat 2>/dev/null && fail "Ctrl+C did not quit"

# Restart with --resume: the conversation comes back from the autosave.
t new-session -d -s chat -x 100 -y 30 "$BIN --resume"
wait_for 'student-chat\.pt' 20
wait_for 'Tell me a story about a bird\.' 10
snap 07-resumed
grep -q 'Tell me a story about a cat\.' "$OUT/07-resumed.txt" || t send-keys -t chat PageUp
wait_for 'Tell me a (story about a cat|long story about a dog)\.' 5
t send-keys -t chat C-c
echo "e2e ok: captures in $OUT"
