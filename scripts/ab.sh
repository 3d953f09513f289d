#!/usr/bin/env bash
# Two commands that each print a chat/llama.cpp bench JSON line, run alternately N times each
# (A B A B ...): prints every pp_tok_s / tg_tok_s of each side, the best, and the ratio of the bests
# A/B. For A/B builds of chat on a shared machine, where one quiet run says more than a median.
#
# usage: scripts/ab.sh N 'CMD_A' 'CMD_B'
set -euo pipefail
n=${1:?usage: scripts/ab.sh N CMD_A CMD_B} a=${2:?} b=${3:?}
for _ in $(seq "$n"); do
	for side in A B; do
		if [ "$side" = A ]; then cmd=$a; else cmd=$b; fi
		line=$(bash -c "$cmd" 2>/dev/null | grep pp_tok_s | tail -1)
		pp=$(sed -n 's/.*"pp_tok_s":\([0-9.e+-]*\).*/\1/p' <<<"$line")
		tg=$(sed -n 's/.*"tg_tok_s":\([0-9.e+-]*\).*/\1/p' <<<"$line")
		echo "$side ${pp:-0} ${tg:-0}"
	done
done | awk '{pp[$1]=pp[$1]" "$2; tg[$1]=tg[$1]" "$3; if($2>bp[$1])bp[$1]=$2; if($3>bt[$1])bt[$1]=$3}
END{for(k in bp){printf "%s best pp %.1f tg %.1f | pp:%s | tg:%s\n",k,bp[k],bt[k],pp[k],tg[k]}
printf "best ratio A/B pp %.3f tg %.3f\n", bp["A"]/bp["B"], bt["A"]/bt["B"]}'
