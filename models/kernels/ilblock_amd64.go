//go:build amd64 && !purego

package kernels

import "unsafe"

const ilHasAsm = true

//go:noescape
func il8T1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T1AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T2AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T3AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T4AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T5AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T6AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T7AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T8AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T1AVXVNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T2AVXVNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T3AVXVNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T4AVXVNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T1AVXVNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T2AVXVNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T3AVXVNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T4AVXVNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T1AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T2AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T3AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T4AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT1AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT2AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT3AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT4AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT1AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT2AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT3AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT4AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT1AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT2AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT3AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT4AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT1AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT2AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT3AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT4AVX2(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T1VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T2VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T1VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T2VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT1VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT2VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT1VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT2VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT1VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT2VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT1VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT2VNNINT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T1AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8T2AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T1AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4T2AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT1AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4gT2AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT1AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4nlT2AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT1AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il4mT2AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT1AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func il8mT2AVX2NT(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

//go:noescape
func ilQuantAVX2(dst *byte, x *float32, nb, off int)

// ilQuantAsm quantizes token t of x into a's packed slot (ILAct.Quantize).
func ilQuantAsm(a *ILAct, x []float32, t int) {
	nb := a.cols / Q8Block
	ilQuantAVX2(&a.b[(t/ilTok)*nb*ilActBlock+40*(t%ilTok)], &x[t*a.cols], nb, int(-ilSumMul(a.k)))
}

type ilTileFunc func(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)

// ilTiles are the tiles by format, by kernel set (VNNI, AVX2) and token count - 1.
var ilTiles = [6][2][]ilTileFunc{
	{
		{il8T1VNNI, il8T2VNNI, il8T3VNNI, il8T4VNNI, il8T5VNNI, il8T6VNNI, il8T7VNNI, il8T8VNNI},
		{il8T1AVX2, il8T2AVX2, il8T3AVX2, il8T4AVX2, il8T5AVX2, il8T6AVX2, il8T7AVX2, il8T8AVX2},
	},
	{
		{il4T1VNNI, il4T2VNNI, il4T3VNNI, il4T4VNNI, il4T5VNNI, il4T6VNNI, il4T7VNNI, il4T8VNNI},
		{il4T1AVX2, il4T2AVX2, il4T3AVX2, il4T4AVX2},
	},
	{
		{il4gT1VNNI, il4gT2VNNI, il4gT3VNNI, il4gT4VNNI, il4gT5VNNI, il4gT6VNNI, il4gT7VNNI, il4gT8VNNI},
		{il4gT1AVX2, il4gT2AVX2, il4gT3AVX2, il4gT4AVX2},
	},
	{
		{il4nlT1VNNI, il4nlT2VNNI, il4nlT3VNNI, il4nlT4VNNI, il4nlT5VNNI, il4nlT6VNNI, il4nlT7VNNI, il4nlT8VNNI},
		{il4nlT1AVX2, il4nlT2AVX2, il4nlT3AVX2, il4nlT4AVX2},
	},
	{
		{il4mT1VNNI, il4mT2VNNI, il4mT3VNNI, il4mT4VNNI, il4mT5VNNI, il4mT6VNNI, il4mT7VNNI, il4mT8VNNI},
		{il4mT1AVX2, il4mT2AVX2, il4mT3AVX2, il4mT4AVX2},
	},
	{
		{il8mT1VNNI, il8mT2VNNI, il8mT3VNNI, il8mT4VNNI, il8mT5VNNI, il8mT6VNNI, il8mT7VNNI, il8mT8VNNI},
		{il8mT1AVX2, il8mT2AVX2, il8mT3AVX2, il8mT4AVX2},
	},
}

// ilVEXTiles are IL8's and IL4's tiles for AVX-VNNI (the VEX VPDPBUSD on
// ymm), by format and token count - 1; the other formats take their AVX2
// tiles there.
var ilVEXTiles = [6][]ilTileFunc{
	IL8: {il8T1AVXVNNI, il8T2AVXVNNI, il8T3AVXVNNI, il8T4AVXVNNI},
	IL4: {il4T1AVXVNNI, il4T2AVXVNNI, il4T3AVXVNNI, il4T4AVXVNNI},
}

// ilStreamTiles are the 1- and 2-token tiles of ilTiles that fetch the
// weights non-temporally, for a model larger than the last-level cache
// (Reuse: Stream), by format and kernel set (VNNI, AVX2).
var ilStreamTiles = [6][2][2]ilTileFunc{
	{{il8T1VNNINT, il8T2VNNINT}, {il8T1AVX2NT, il8T2AVX2NT}},
	{{il4T1VNNINT, il4T2VNNINT}, {il4T1AVX2NT, il4T2AVX2NT}},
	{{il4gT1VNNINT, il4gT2VNNINT}, {il4gT1AVX2NT, il4gT2AVX2NT}},
	{{il4nlT1VNNINT, il4nlT2VNNINT}, {il4nlT1AVX2NT, il4nlT2AVX2NT}},
	{{il4mT1VNNINT, il4mT2VNNINT}, {il4mT1AVX2NT, il4mT2AVX2NT}},
	{{il8mT1VNNINT, il8mT2VNNINT}, {il8mT1AVX2NT, il8mT2AVX2NT}},
}

// runAsm computes row groups [g0, g1) of every token with the tiles: 8
// tokens at a time on VNNI and for AVX2's IL8, 4 for the others. A
// last group with fewer than 16 rows
// goes through a buffer.
func (p *ilProd) runAsm(g0, g1 int) {
	set := 1
	if isa >= isaAVX512VNNI {
		set = 0
	}
	tiles := ilTiles[p.k][set]
	if isa == isaAVXVNNI && ilVEXTiles[p.k] != nil {
		tiles = ilVEXTiles[p.k]
	}
	maxT := len(tiles)
	nb := p.cols / Q8Block
	bb := ilBlockBytes(p.k)
	n := p.a.n
	var gs *float32
	ng, gb := 0, 0
	if p.k == IL4G {
		ng, gb = (p.cols+p.g-1)/p.g, p.g/Q8Block
	}
	buf := &p.a.tail
	for grp := g0; grp < g1; grp++ {
		w := &p.w[grp*nb*bb]
		if p.k == IL4G {
			gs = &p.gs[grp*ng*ILRows]
		}
		r0 := grp * ILRows
		full := r0+ILRows <= p.rows
		for t0 := 0; t0 < n; t0 += maxT {
			T := min(maxT, n-t0)
			xa := (*byte)(unsafe.Add(unsafe.Pointer(&p.a.b[(t0/ilTok)*nb*ilActBlock]), 40*(t0%ilTok)))
			tile := tiles[T-1]
			if p.reuse == Stream && T <= 2 {
				tile = ilStreamTiles[p.k][set][T-1]
			}
			if full {
				tile(&p.out[t0*p.rows+r0], w, nb, xa, p.rows, gs, gb)
				continue
			}
			tile(&buf[0], w, nb, xa, ILRows, gs, gb)
			for t := 0; t < T; t++ {
				copy(p.out[(t0+t)*p.rows+r0:(t0+t+1)*p.rows], buf[t*ILRows:])
			}
		}
	}
}
