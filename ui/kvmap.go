package ui

import (
	"fmt"
	"strings"

	"chat/session"
)

// The KV block map: the paged pool as a grid, one cell per block (or per
// few blocks, when the pool has more blocks than the view has cells: the
// cell shows the most telling state among them, evicted before shared
// before this conversation's before cached before free). The blocks are
// taken from the bottom of the pool up, so the used ones gather at the
// start. Copy-on-write shows as a shared block turning into one of this
// conversation's, prefix reuse as a reply starting on shared blocks.

// blockGlyphs and blockNames are by session.BlockState.
var (
	blockGlyphs = [5]string{"·", "█", "▓", "▒", "×"}
	blockNames  = [5]string{"free", "this chat", "shared", "cached", "evicted"}
	blockRank   = [5]int{0, 2, 3, 1, 4} // which state a grouped cell shows
)

func (m *model) kvRows(w int) int {
	n := len(m.views.blocks)
	if n == 0 || w <= 0 {
		return 2
	}
	return 2 + min(8, (n+w-1)/w) // title, grid, legend
}

func (m *model) kvLines(w, h int) []string {
	st := m.st
	bs := m.views.blocks
	switch {
	case m.remote():
		return m.viewMessage("KV blocks", "not with --remote: the server's pool is its own", w, h)
	case len(bs) == 0:
		return m.viewMessage("KV blocks", "shown once the engine has a pool", w, h)
	}
	var count [5]int
	for _, b := range bs {
		count[b]++
	}
	sum := fmt.Sprintf("%d blocks · this chat %d (%d shared) · cached %d · evicted %d · free %d",
		len(bs), count[session.BlockOwn]+count[session.BlockShared], count[session.BlockShared],
		count[session.BlockCached], count[session.BlockEvicted], count[session.BlockFree])
	if h == 1 {
		return []string{st.r(st.dim, "KV "+sum)}
	}
	rows := max(1, h-2)
	if h == 2 {
		rows = 1
	}
	// One block per cell when the blocks in use fit (the pool fills from
	// the bottom: the rest is free), else several per cell.
	shown, last := len(bs), -1
	for i, b := range bs {
		if b != session.BlockFree {
			last = i
		}
	}
	per := 1
	if last < rows*w {
		shown = min(len(bs), rows*w)
	} else {
		per = (len(bs) + rows*w - 1) / (rows * w)
	}
	out := []string{m.viewTitle("KV pool", sum, w)}
	cells := (shown + per - 1) / per
	for r := 0; r < rows && r*w < cells; r++ {
		var b strings.Builder
		for c := r * w; c < min(cells, (r+1)*w); c++ {
			s := bs[c*per]
			for _, x := range bs[c*per : min(len(bs), (c+1)*per)] {
				if blockRank[x] > blockRank[s] {
					s = x
				}
			}
			b.WriteString(st.r(st.block[s], blockGlyphs[s]))
		}
		out = append(out, b.String())
	}
	if len(out) < h {
		var leg []string
		for _, s := range []session.BlockState{session.BlockOwn, session.BlockShared, session.BlockCached, session.BlockEvicted, session.BlockFree} {
			leg = append(leg, st.r(st.block[s], blockGlyphs[s])+" "+blockNames[s])
		}
		cell := ""
		switch {
		case per > 1:
			cell = fmt.Sprintf(" · a cell is %d blocks", per)
		case shown < len(bs):
			cell = fmt.Sprintf(" · %d more free", len(bs)-shown)
		}
		out = append(out, " "+strings.Join(leg, "  ")+st.r(st.dim, " · shared: ref count > 1"+cell))
	}
	return out
}
