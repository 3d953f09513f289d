package kernels

import (
	"sync"
	"unsafe"
)

// The batched float products (MatMul; MatMulF16IL and MatMulBF16IL on
// interleaved weights) on AVX-512 run register tiles of R weight rows × P
// token pairs (pairtile_gen.py writes them): one
// zmm holds one row with two tokens, 8 lanes each, so every (row, token)
// keeps matVecAVX2's 8-lane FMA chain and HSUM and the product stays bitwise
// n MatVec calls. The activations are packed once per call into pairs
// (packPairsF32); a row tile stays in L1 while it meets every pair, so each
// weight is read from memory once per call whatever the number of tokens,
// which is what a decode step of several sequences needs (2 to 16 tokens):
// the 4×3 ymm tile of matMulAsm reloads a row tile for every 3 tokens and
// leaves 1 or 2 tokens to the MatVec kernel.

// wkind is a float weight format of the products that widen in registers:
// float32 as stored, f16 and bf16 from 2 bytes.
type wkind uint8

const (
	wF32 wkind = iota
	wF16
	wBF16
)

// pairRows are the row heights of the tiles, tallest first; pairMaxP the
// most pairs a tile takes.
var pairRows = [...]int{6, 4, 1}

const pairMaxP = 4

// pairTilesOK reports whether a batched float product of n tokens takes the
// pair tiles.
func pairTilesOK(cols, n int) bool {
	return pairHasAsm && isa >= isaAVX512 && !noTiles && n >= 2 && cols > 0
}

// pairLen is the packed length of n tokens of cols values, in floats.
func pairLen(cols, n int) int { return (n + 1) / 2 * (cols + 7) / 8 * 16 }

// packPairsF32 writes the n tokens of x ([n][cols]) into xp as pairs: pair
// p's chunk c (columns 8c..8c+7) is xp[(p·nc+c)·16:][:16], token 2p's 8
// values then token 2p+1's, zero past the row's end and for a missing last
// token.
func packPairsF32(xp, x []float32, cols, n int) {
	nc := (cols + 7) / 8
	xp = xp[:pairLen(cols, n)]
	for p := 0; p < (n+1)/2; p++ {
		for h := 0; h < 2; h++ {
			t := 2*p + h
			dst := xp[p*nc*16+8*h:]
			if t >= n {
				for c := 0; c < nc; c++ {
					clear(dst[c*16 : c*16+8])
				}
				continue
			}
			src := x[t*cols : (t+1)*cols]
			c := 0
			for ; 8*c+8 <= cols; c++ {
				copy(dst[c*16:c*16+8], src[8*c:8*c+8])
			}
			if c < nc {
				d := dst[c*16 : c*16+8]
				clear(d)
				copy(d, src[8*c:])
			}
		}
	}
}

type pairBuf struct{ xp []float32 }

// pairBufs holds packed-activation buffers, one per concurrent caller,
// reused so steady-state calls do not allocate.
var pairBufs = sync.Pool{New: func() any { return new(pairBuf) }}

// pairMatMul packs x and runs the tiles over every row, split over the pool
// when the product is large enough. w is the weights, of kind k: float32
// row-major, f16 and bf16 interleaved (f16il.go).
func pairMatMul(out []float32, w unsafe.Pointer, k wkind, x []float32, rows, cols, n int) {
	b := pairBufs.Get().(*pairBuf)
	need := pairLen(cols, n)
	if cap(b.xp) < need {
		b.xp = make([]float32, need)
	}
	xp := b.xp[:need]
	packPairsF32(xp, x, cols, n)
	done := false
	if rows*cols*n >= parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.out, j.dx, j.wp, j.wk = opPair, out, xp, w, k
			j.rows, j.cols, j.n = rows, cols, n
			if k == wF32 {
				defaultPool.exec(pairRows[0])
			} else {
				defaultPool.exec(HalfILRows)
			}
			done = true
		}
	}
	if !done {
		pairRange(out, w, k, xp, rows, cols, n, 0, rows)
	}
	pairBufs.Put(b)
}

// pairRange computes rows [r0, r1) of every token: tiles of 6 rows, then
// 4, then 1, each over the pairs 4 at a time. Interleaved weights (f16 and
// bf16) take them within each group of 16 rows (6, 6, 4), r0 a multiple of
// 16.
func pairRange(out []float32, w unsafe.Pointer, k wkind, xp []float32, rows, cols, n, r0, r1 int) {
	if k == wF32 {
		pairRowTiles(out, w, k, xp, rows, cols, n, r0, r1, cols*4)
		return
	}
	gb := halfILGroup(cols) * 2
	for r := r0; r < r1; r += HalfILRows {
		pairRowTiles(out[r:], unsafe.Add(w, r/HalfILRows*gb), k, xp, rows, cols, n, 0, min(HalfILRows, r1-r), 16)
	}
}

// pairRowTiles runs pairRange's tiles over rows [r0, r1) of w, ws bytes
// apart (16 in an interleaved group).
func pairRowTiles(out []float32, w unsafe.Pointer, k wkind, xp []float32, rows, cols, n, r0, r1, ws int) {
	np := (n + 1) / 2
	ps := (cols + 7) / 8 * 64 // bytes per packed pair
	r := r0
	for ri, R := range pairRows {
		for ; r+R <= r1; r += R {
			wr := unsafe.Add(w, r*ws)
			for g := 0; g < np; g += pairMaxP {
				P := min(pairMaxP, np-g)
				odd := 0
				if g+P == np && n%2 == 1 {
					odd = 1
				}
				pairTile(k, ri, P, &out[2*g*rows+r], wr, &xp[g*ps/4], cols, rows, ws, ps, odd)
			}
		}
	}
}
