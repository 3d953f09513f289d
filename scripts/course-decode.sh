#!/usr/bin/env bash
# Decode speed of chat on a course checkpoint the way the course's own figure was taken, as a ratio to it.
#
# usage: scripts/course-decode.sh [MODEL]   (default ../shared/models/course/student.pt)
#   For each weight format in FORMATS, runs RUNS times
#     chat --model MODEL --prompt "Once upon a time" -n 200 --greedy --threads 1 --json [--quant F]
#   and takes the median of stats.decode_tok_s: tokens after the first ÷ time since the first token, the
#   measure the course's figure uses (its scripts/generate_text.py with the KV cache: the model's generate()
#   on the same prompt, greedy, 200 tokens, torch.set_num_threads(1)). Prints one line per format with the
#   ratio to COURSE_TOK_S.
# env: RUNS (5), FORMATS ("f32 int8"), COURSE_TOK_S (450: the course's cached PyTorch generate on student.pt,
#      1 thread, measured on this project's machines, issue 13), CHAT (a built chat binary; default: go build).
# The machine is shared: note the load (uptime) next to the figures; they are meaningful as ratios only.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model="${1:-$repo/../shared/models/course/student.pt}"
runs="${RUNS:-5}" formats="${FORMATS:-f32 int8}" course="${COURSE_TOK_S:-450}"
die() { echo "course-decode.sh: $*" >&2; exit 1; }
[ -f "$model" ] || die "no model at $model"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
chat="${CHAT:-}"
if [ -z "$chat" ]; then
  (cd "$repo" && go build -o "$tmp/chat" .) || die "go build failed"
  chat="$tmp/chat"
fi

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "load: $(uptime | sed 's/.*load average: //')"
for f in $formats; do
  rates=""
  for _ in $(seq "$runs"); do
    q=()
    [ "$f" = f32 ] || q=(--quant "$f")
    line="$("$chat" --model "$model" --prompt "Once upon a time" -n 200 --greedy --threads 1 --json "${q[@]}" 2>/dev/null)" ||
      die "chat failed for $f"
    rate="$(sed -n 's/.*"decode_tok_s":\([0-9.eE+-]*\).*/\1/p' <<<"$line")"
    [ -n "$rate" ] || die "no decode_tok_s in: $line"
    rates+="$rate"$'\n'
  done
  m="$(printf '%s' "$rates" | median)"
  awk -v f="$f" -v m="$m" -v c="$course" -v r="$runs" \
    'BEGIN { printf "%-8s decode %8.0f tok/s (median of %d)   %.2f× the course (%g tok/s)\n", f, m, r, m / c, c }'
done
echo "load: $(uptime | sed 's/.*load average: //')"
