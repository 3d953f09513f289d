#!/usr/bin/env bash
# End-to-end: drive the real binary in tmux as a person would (type, wait for
# the reply, regenerate, change the temperature, take a draft model mid-chat,
# save and load the KV cache, switch to int8, constrain a reply, turn each
# view on in the middle of a reply in step mode, stop a reply with Ctrl+C,
# open the help and the panel overlay, quit, resume) and check the screen.
# Captures are left in $OUT for a human to read.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d /tmp/chat-e2e.XXXXXX)}
BIN="$OUT/chat"
SOCK="chat-e2e-$$"
SHARED=${CHAT_SHARED_MODELS:-../shared/models}
go build -o "$BIN" .

t() { tmux -L "$SOCK" "$@"; }
SERVE_PID=
cleanup() {
	t kill-server 2>/dev/null || true
	[ -z "$SERVE_PID" ] || kill "$SERVE_PID" 2>/dev/null || true
}
trap cleanup EXIT

fail() {
	echo "e2e FAIL: $*" >&2
	t capture-pane -p -t chat >"$OUT/fail.txt" 2>/dev/null || true
	cat "$OUT/fail.txt" >&2 || true
	exit 1
}

# The script waits on what the screen shows, never a fixed time. A wait's
# SECONDS only bounds a hang; on a loaded host it is at least 20 s.

# poll SECONDS CMD...: run CMD every 0.1 s until it succeeds (0), or give up
# after SECONDS (1).
poll() {
	local deadline=$((SECONDS + ($1 > 20 ? $1 : 20)))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# shows PATTERN...: one capture of the screen matches every grep -E PATTERN
# (sent_and_idle asks for several at once).
shows() {
	local screen p
	screen=$(t capture-pane -p -t chat 2>/dev/null) || return 1 # gone
	for p in "$@"; do grep -qE -- "$p" <<<"$screen" || return 1; done
}
hides() {
	local screen
	screen=$(t capture-pane -p -t chat 2>/dev/null) || return 1 # gone
	! grep -qE -- "$1" <<<"$screen"
}

# wait_for PATTERN [SECONDS]: until the screen shows PATTERN.
wait_for() { poll "${2:-30}" shows "$1" || fail "timed out waiting for /$1/"; }
# wait_gone PATTERN [SECONDS]: until the screen no longer shows PATTERN.
wait_gone() { poll "${2:-30}" hides "$1" || fail "/$1/ is still on the screen"; }

snap() { t capture-pane -p -t chat >"$OUT/$1.txt"; }

# reply FILE: the transcript lines of the reply to the first message in a
# capture (the panel's column cut off), up to the hint line.
reply() { cut -c1-68 "$1" | awk 'NR > 2 && /^[^ ]/{exit} /^  [^ ]/{printf "%s\n", $0}'; }

# sent_and_idle MSG: the screen shows MSG, the input box is empty (so MSG
# is in the transcript, not the box) and the state is idle. Enter empties
# the box and makes the UI busy in one update, so idle after that means the
# reply has finished.
sent_and_idle() {
	shows "^› $(printf '%s' "$1" | sed 's/[.[\*^$()+?{|]/\\&/g')" '^› Say something' 'state +idle'
}

# send MSG: type a message and wait until its reply has finished.
send() {
	t send-keys -t chat "$1" Enter
	poll 60 sent_and_idle "$1" || fail "no finished reply to '$1'"
}

gone() { ! t has-session -t chat 2>/dev/null; }

quit() {
	# Right after a reply ended by itself the first Ctrl+C only says that
	# the next one quits (it was likely meant for the reply): press again
	# once it has said so (the notice may already be up; a press on a
	# session that has just quit is harmless).
	t send-keys -t chat C-c
	poll 10 eval 'gone || shows "again quits"' || fail "Ctrl+C on an idle prompt did nothing"
	gone || t send-keys -t chat C-c 2>/dev/null || true
	poll 10 gone || fail "Ctrl+C on an idle prompt did not quit"
}

export XDG_DATA_HOME="$OUT/data" XDG_CONFIG_HOME="$OUT/config"
# Replies of at most 120 tokens: the five turns below then fit the 1024-token
# context, so no turn is dropped and the turn after /kv load can reuse the
# whole loaded conversation (at 256, sampled replies sometimes overflow it).
t new-session -d -s chat -x 100 -y 30 "$BIN -n 120"
wait_for 'student-chat-1k\.pt · modern · f32 · 2\.6M · ctx 1024 · chat' 20
snap 01-start

send 'Tell me a story about a cat.'
snap 02-reply
grep -qE '^› Tell me a story about a cat\.' "$OUT/02-reply.txt" || fail "the user message is not in the transcript"
[ "$(grep -cE '^  [A-Z]' "$OUT/02-reply.txt")" -ge 1 ] || fail "no reply text on screen"
grep -qE 'decode +[0-9.]+ tok/s' "$OUT/02-reply.txt" || fail "no decode speed in the panel"
grep -qE 'seed +random' "$OUT/02-reply.txt" || fail "the seed is not random by default"

# Regenerate (Ctrl+R) draws a new seed: a different reply.
regenerated() {
	snap "$1"
	grep -qE 'state +idle' "$OUT/$1.txt" && [ "$(reply "$OUT/02-reply.txt")" != "$(reply "$OUT/$1.txt")" ]
}
different=0
for try in 1 2 3; do
	t send-keys -t chat C-r
	# Done when idle with another reply; the same reply again (a seed that
	# drew it) only shows as no change before the bound, then try again.
	if poll 30 regenerated "03-regenerated-$try"; then
		different=1
		break
	fi
done
[ "$different" = 1 ] || fail "regenerate gave the same reply three times"

# F3 raises the temperature by 0.1; the panel shows it at once.
t send-keys -t chat F3
wait_for 'temperature 0\.9 ' 5
wait_for '✓ temperature 0\.9' 5
snap 04-temperature

# A draft model chosen mid-session: the panel shows it at once, and its
# acceptance after the next reply.
t send-keys -t chat "/draft $SHARED/course/tiny.pt" Enter
wait_for '✓ speculative decoding with the draft model tiny\.pt' 20
wait_for 'spec +tiny\.pt k=4' 5
wait_for 'accepted +after next reply' 5
snap 05-draft
send 'Tell me a story about a dog.'
wait_for 'accepted +[0-9]+% · [0-9.]+/pass' 5
snap 06-draft-turn
t send-keys -t chat '/draft off' Enter
wait_for '✓ draft model off' 10

# The KV cache goes to a file.
t send-keys -t chat "/kv save $OUT/chat.kv" Enter
wait_for '✓ saved the KV cache' 10
[ -s "$OUT/chat.kv" ] || fail "/kv save wrote no file"
snap 07-kv-save

# F11 switches the weights to int8 mid-chat, confirmed; the next turn
# prefills the conversation again; F11 switches back.
t send-keys -t chat F11
wait_for 'student-chat-1k\.pt · modern · int8' 20
wait_for 'weights (now )?int8' 5
snap 08-int8
send 'Tell me a story about a bird.'
snap 09-int8-turn
grep -qE 'reused +0 tok' "$OUT/09-int8-turn.txt" || fail "the int8 turn should re-prefill the conversation"
t send-keys -t chat F11
wait_for 'student-chat-1k\.pt · modern · f32' 20

# /format json: the next reply is JSON. The autosaved conversation holds the
# reply verbatim, and it must parse (null too: jq -e would call that a
# failure); the panel names the constraint.
t send-keys -t chat '/format json' Enter
wait_for 'replies are constrained: json' 5
send 'Describe a cat as JSON.'
snap 04e-json
grep -qE 'format +json' "$OUT/04e-json.txt" || fail "the panel does not show the constraint"
latest=$(ls -t "$XDG_DATA_HOME"/chat/sessions/*.json | head -1)
jq -e '.messages[-1].role == "assistant" and (.messages[-1].content | length > 0)' "$latest" >/dev/null ||
	fail "the last saved message is not a non-empty reply"
jq -r '.messages[-1].content' "$latest" >"$OUT/04e-json-reply.txt"
jq . "$OUT/04e-json-reply.txt" >/dev/null || fail "the /format json reply does not parse: $(cat "$OUT/04e-json-reply.txt")"
t send-keys -t chat '/format off' Enter
wait_for 'replies are free' 5

# Help overlay and back.
t send-keys -t chat F1
wait_for 'Keys  \(sampler keys act on the next token\)' 5
snap 10-help
t send-keys -t chat Escape
wait_gone 'Keys  \(sampler keys' 5

# 80x24: no side panel; Ctrl+O shows it over the transcript.
t resize-window -t chat -x 80 -y 24
wait_for 'Ctrl\+O panel' 5
snap 11-80x24
t send-keys -t chat C-o
wait_for '│ temperature 0\.9' 5
wait_for 'Esc closes the panel' 5
snap 12-80x24-panel
t send-keys -t chat Escape
wait_gone '│ temperature' 5
snap 13-80x24-closed

# Narrow terminal: still renders.
t resize-window -t chat -x 40 -y 12
wait_for '^ student-chat-1k\.pt .*…$' 5 # the header, cut at 40 columns
snap 14-narrow
t resize-window -t chat -x 100 -y 30
wait_for '│ state +idle' 5
quit

# A new session: --resume brings the conversation back, /kv load brings its
# KV cache, and the next turn reuses it (the panel says so).
t new-session -d -s chat -x 100 -y 30 "$BIN --resume -n 120"
wait_for 'student-chat-1k\.pt' 20
wait_for 'Tell me a story about a bird\.' 10
snap 15-resumed
t send-keys -t chat "/kv load $OUT/chat.kv" Enter
wait_for '✓ loaded the KV cache of [0-9]+ tokens' 10
snap 16-kv-load
send 'Tell me a story about a fish.'
snap 17-kv-reused
reused=$(grep -oE 'reused +[0-9]+ tok' "$OUT/17-kv-reused.txt" | grep -oE '[0-9]+')
[ "${reused:-0}" -ge 100 ] || fail "the turn after /kv load reused ${reused:-0} tokens, want the loaded conversation's"
quit

# Ctrl+C while a reply streams stops it and keeps the text; a second one on
# the idle prompt quits; the stopped turn is saved.
t new-session -d -s chat -x 100 -y 30 "$BIN --raw -n 100000"
wait_for 'raw' 20
t send-keys -t chat 'Once upon a time' Enter
wait_for 'state +generating' 10
text_lines() { [ "$(t capture-pane -p -t chat | cut -c1-68 | grep -cE '[a-z]')" -ge "$1" ]; }
poll 30 text_lines 12 || fail "the raw reply did not fill the screen"
t send-keys -t chat C-c
wait_for 'state +stopped' 20
wait_for 'stopped; the text so far is kept · Ctrl\+C again quits' 5
snap 18-ctrl-c-stopped
t has-session -t chat 2>/dev/null || fail "the first Ctrl+C quit"
grep -qE 'generated +[1-9][0-9]* tok' "$OUT/18-ctrl-c-stopped.txt" || fail "nothing was generated before Ctrl+C"
[ "$(cut -c1-68 "$OUT/18-ctrl-c-stopped.txt" | grep -cE '[a-z]')" -ge 10 ] || fail "the stopped text is not on screen"
quit
t new-session -d -s chat -x 100 -y 30 "$BIN --resume"
wait_for 'raw' 20
t send-keys -t chat C-Home
wait_for '^Once upon a time' 10
snap 19-stopped-resumed
quit

# The views (issue 17), each turned on during a reply, in a new chat.
t new-session -d -s chat -x 100 -y 30 "$BIN"
wait_for 'student-chat-1k\.pt' 20
send 'Tell me a story about a cat.'
# Step mode holds the
# reply so there is time to look: Alt+. turns it on, the reply waits before
# its first token, and each press makes one.
t send-keys -t chat '/set max_tokens 16' Enter
wait_for 'max_tokens 16' 5
t send-keys -t chat M-.
wait_for 'step mode: Alt\+\. makes each token' 5
t send-keys -t chat 'Tell me a story about a fox.' Enter
wait_for 'state +stepping' 10
wait_for 'step mode · Alt\+\. next token · Esc leaves step mode' 5
t send-keys -t chat M-n
wait_for '── next token #1 · not drawn yet \(Alt\+\. draws it\)' 5
wait_for 'vocab 4096 → temperature 4096 → top-p [0-9]+' 5
wait_for 'before the chain +after: sampled from' 5
snap 23-view-next
[ "$(grep -cE '^  "|^▸ "' "$OUT/23-view-next.txt")" -ge 3 ] || fail "the next-token view lists no candidates"
for i in 1 2 3; do
	t send-keys -t chat M-.
	wait_for "generated +$i tok" 10
done
wait_for '── next token #4 · not drawn yet' 5
wait_for 'token #3 drew "' 5
snap 24-view-step
# A hot key reshapes the bars before the token is drawn: greedy leaves one id.
t send-keys -t chat F10
wait_for 'vocab 4096 → greedy 1' 5
wait_for '100\.0% █' 5
snap 25-view-greedy
t send-keys -t chat F10
wait_for 'vocab 4096 → temperature 4096' 5
# The token view turned on during a reply shows the replies made from then
# on (it needs every token of a reply); its legend shows at once.
t send-keys -t chat M-h
wait_for 'token view on: replies made from now on' 5
wait_for 'tokens: ¦ between tokens|tokens: p ' 5
for i in 4 5 6 7; do
	t send-keys -t chat M-.
	wait_for "generated +$i tok" 10
done
snap 26-view-tokens-legend
t send-keys -t chat M-v
wait_for '── KV pool · [0-9]+ blocks · this chat [1-9][0-9]* \([0-9]+ shared\)' 5
wait_for '█ this chat +▓ shared +▒ cached +× evicted +· free' 5
snap 27-view-kv
grep -qE '^[█▓▒×·]{20,}' "$OUT/27-view-kv.txt" || fail "the KV map draws no grid"
t send-keys -t chat M-w
wait_for '── sparklines · this reply │ per reply' 5
wait_for '^ decode +' 5
snap 28-view-spark
# Esc leaves step mode: the reply runs to its end, shown as tokens.
t send-keys -t chat Escape
wait_for 'state +idle' 60
grep -q 'views .*step' <(t capture-pane -p -t chat) && fail "Esc did not leave step mode"
wait_for '^ decode +[▁▂▃▄▅▆▇█]+ +[0-9.]+ tok/s' 5
snap 29-views-done
# The next reply is drawn as tokens, and so is its prompt's turn.
t send-keys -t chat '/view next off' Enter
t send-keys -t chat '/view kv off' Enter
wait_for 'kv_map off' 5
t send-keys -t chat 'And then?' Enter
wait_for 'And¦ then¦\?' 20
wait_for 'state +idle' 60
wait_for '^  [^ ]+¦' 5
snap 29b-view-tokens
grep -qE '^› .*¦' "$OUT/29b-view-tokens.txt" || fail "the prompt's turn is not shown as tokens"
t send-keys -t chat M-n
t send-keys -t chat M-v
wait_for 'kv_map on' 5
t send-keys -t chat '/view' Enter
wait_for 'views: next \(Alt\+n\) on · step \(Alt\+\.\) off · tokens \(Alt\+h\) on · kv \(Alt\+v\) on · spark \(Alt\+w\) on' 5
t send-keys -t chat '/view off' Enter
wait_for 'every view off' 5
wait_gone '── next token' 5
snap 30-views-off
t send-keys -t chat '/set max_tokens 256' Enter
wait_for 'max_tokens 256' 5

quit

# A newcomer from ollama or llama.cpp: a model name, ollama's store
# commands, llama-cli's GPU flag, a Hugging Face folder. Each gets one line
# saying what to do, a non-zero exit and no TUI.
mkdir -p "$OUT/hf-model"
echo '{}' >"$OUT/hf-model/config.json"
printf '\002\0\0\0\0\0\0\0{}' >"$OUT/hf-model/model.safetensors"
n=0
for args in "run llama3.2" "pull llama3" "-cnv -p hi" "$OUT/hf-model"; do
	n=$((n + 1))
	t new-session -d -s chat -x 240 -y 10 "cd '$OUT' && '$BIN' $args; echo EXIT=\$?; sleep 30"
	wait_for 'EXIT=[0-9]+' 20
	snap "19-newcomer-$n"
	grep -q 'EXIT=[12]' "$OUT/19-newcomer-$n.txt" || fail "chat $args did not fail"
	[ "$(grep -c . "$OUT/19-newcomer-$n.txt")" -eq 2 ] || fail "chat $args: not one line"
	grep -q 'state' "$OUT/19-newcomer-$n.txt" && fail "chat $args opened the TUI"
	t kill-session -t chat
done
grep -q 'llama3.2: no such file (a model is the path of a GGUF or .pt file; none is downloaded by name)' "$OUT/19-newcomer-1.txt" || fail "a model name is not explained"
grep -q 'no pull command: chat keeps no model store' "$OUT/19-newcomer-2.txt" || fail "chat pull is not explained"
grep -q -- "-cnv with a prompt: llama-cli chats on after its reply, chat prints the reply and exits" "$OUT/19-newcomer-3.txt" || fail "-cnv -p is not explained"
grep -q 'a folder of safetensors weights (a Hugging Face model): convert the model to GGUF' "$OUT/19-newcomer-4.txt" || fail "a Hugging Face folder is not explained"

# llama-cli's -cnv alone is what the TUI is: it opens, with a notice.
t new-session -d -s chat -x 110 -y 30 "$BIN -cnv"
wait_for '-cnv is ignored: chat.s TUI is llama-cli.s conversation' 20
quit

# In the TUI: ollama's """ multi-line message; ollama's /set verbose gets
# its answer; a notice over several rows keeps every word (the later rows
# used to lose their ends to the edge).
# llama-cli's -ngl 99 is taken: the TUI opens and its notice line says it is ignored.
t new-session -d -s chat -x 110 -y 30 "$BIN -n 60 -ngl 99"
wait_for 'student-chat-1k' 20
wait_for '-ngl is ignored: this app runs on the CPU' 5
t send-keys -t chat '/set verbose' Enter
wait_for "/set verbose is ollama's: the panel shows every reply's timings" 5
t send-keys -t chat '/set zzqqxx 1' Enter
wait_for 'unknown setting "zzqqxx"' 5
snap 19-newcomer-notice
grep -q 'quant, ' "$OUT/19-newcomer-notice.txt" || fail "the settings list lost quant"
grep -A2 'unknown setting' "$OUT/19-newcomer-notice.txt" | grep -q '…' && fail "a notice row is cut"
# (Esc first dismisses the notice: a key sent before that is read, with the
# Esc, as an Alt+key.)
t send-keys -t chat Escape
wait_gone 'unknown setting' 5
t send-keys -t chat '"""' Enter
wait_for '^› """ *$' 5
t send-keys -t chat 'Tell me' Enter
wait_for '^  Tell me *$' 5
t send-keys -t chat 'a story."""' Enter
poll 60 sent_and_idle 'Tell me' || fail 'no finished reply to the """ message'
snap 19-newcomer-quotes
grep -qE '^› Tell me' "$OUT/19-newcomer-quotes.txt" || fail '""" message not sent'
grep -qE '^  a story\.' "$OUT/19-newcomer-quotes.txt" || fail '""" lost its second line'
grep -q '"""' "$OUT/19-newcomer-quotes.txt" && fail 'the quotes were sent'
quit

# --prompt "" continues from the start of a text, headless, without the TUI.
t new-session -d -s chat -x 100 -y 30 "$BIN --prompt '' -n 30; echo EXIT=\$?; sleep 30"
wait_for 'EXIT=[0-9]+' 30
snap 20-empty-prompt
grep -q 'EXIT=0' "$OUT/20-empty-prompt.txt" || fail "--prompt \"\" did not exit 0"
grep -q 'raw mode' "$OUT/20-empty-prompt.txt" || fail "--prompt \"\" is not a raw continuation"
grep -q 'state' "$OUT/20-empty-prompt.txt" && fail "--prompt \"\" opened the TUI"
t kill-session -t chat

# chat --remote on a chat serve this script starts: two turns, and the panel
# shows the server's KV usage and prefix hits from its /metrics.
PORT=$((20000 + $$ % 20000))
"$BIN" serve --addr "127.0.0.1:$PORT" 2>"$OUT/serve.log" &
SERVE_PID=$!
poll 30 grep -q 'on http://' "$OUT/serve.log" || fail "chat serve did not start: $(cat "$OUT/serve.log")"
# (host:port without http://, as OLLAMA_HOST is written)
t new-session -d -s chat -x 110 -y 40 "$BIN --remote 127.0.0.1:$PORT"
wait_for 'student-chat-1k' 20
send 'Tell me a story about a cat.'
send 'And then?'
snap 21-remote
grep -qE 'server +chat' "$OUT/21-remote.txt" || fail "the panel does not name the server"
grep -qE 'KV cache +[0-9]+%' "$OUT/21-remote.txt" || fail "no KV usage from /metrics in the panel"
grep -qE 'prefix hit +[1-9][0-9]*%' "$OUT/21-remote.txt" || fail "no prefix hits from /metrics in the panel"
grep -qE 'reused +[1-9][0-9]* tok' "$OUT/21-remote.txt" || fail "the second turn reused no tokens on the server"
[ "$(cut -c1-78 "$OUT/21-remote.txt" | grep -cE '^  [A-Za-z]')" -ge 2 ] || fail "no remote reply text on screen"
t send-keys -t chat F11
wait_for 'not with --remote' 10
snap 22-remote-f11
quit
kill "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null || true
SERVE_PID=
echo "e2e ok: captures in $OUT"
