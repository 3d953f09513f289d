package kernels

import (
	"sync"
	"unsafe"
)

// Register-tiled batched products of 32-value int8-dot blocks (Q4_0, Q5_0,
// Q8_0 in GGUF's bytes, int4 groups) for prefill. On AVX-512 VNNI a tile is
// 4 weight rows × 6 tokens (on AVX2 one row × 6 tokens in ymm), each weight block unpacked once for the 6 tokens
// and each activation block loaded once for the 4 rows; one zmm holds a row
// with two tokens (8 float lanes each), so every (row, token) keeps the
// lanes and float order of its MatVec and the product stays bitwise equal to
// n MatVec calls.
//
// The activations are packed once per call (packPairs) into token pairs: for
// pair p and block b, 192 bytes at (p·nb + b)·192: the two tokens' 32 int8
// values (int4: evens then odds, int4q8.go), the 16 int32 lanes -off·Σ of
// each lane's 4 values (off: the weights' unsigned offset, 8 for Q4_0 and
// int4, 16 for Q5_0, 128 for Q8_0), and [xd ×8 | xd ×8]. Rows past the last
// whole tile, and tokens past the last whole 6, take the MatVec kernels.

// noTiles turns the tiles off, so benchmarks can measure what they buy.
var noTiles = false

const (
	tileRows   = 4
	tileTokens = 6
	packBlock  = 192 // packed bytes per token pair and block
)

// tileOff is the unsigned offset of op's weight values, or 0 when op has no
// tile on this CPU. AVX2 has tiles of one row × 6 tokens in ymm for Q4_0,
// Q8_0 and int4 (same packing; Q8_0 there takes the sign trick instead).
func tileOff(op int) int {
	if isa < isaAVX2 || noTiles {
		return 0
	}
	switch op {
	case opMatVecQ4_0, opMatVecI4Q8:
		return 8
	case opMatVecQ5_0:
		if isa >= isaAVX512VNNI {
			return 16
		}
	case opMatVecQ8B:
		return 128
	}
	return 0
}

// tileRowsNow is the weight rows of the 32-value-block tiles in use.
func tileRowsNow() int {
	if isa >= isaAVX512VNNI {
		return tileRows
	}
	return 1
}

type packBuf struct{ b []byte }

// packBufs holds packed-activation buffers, one per concurrent caller, reused
// so steady-state calls do not allocate.
var packBufs = sync.Pool{New: func() any { return new(packBuf) }}

// packPairs packs tokens [0, 2·npairs) of the [n][cols] activation (xq, xd)
// for op into dst (npairs·nb·192 bytes, nb = cols/32).
func packPairs(dst []byte, op, off int, xq []int8, xd []float32, cols, npairs int) {
	nb := cols / Q8Block
	for p := 0; p < npairs; p++ {
		for b := 0; b < nb; b++ {
			blk := dst[(p*nb+b)*packBlock : (p*nb+b+1)*packBlock]
			xs := (*[64]int8)(unsafe.Pointer(&blk[0]))
			neg := (*[16]int32)(unsafe.Pointer(&blk[64]))
			xdv := (*[16]float32)(unsafe.Pointer(&blk[128]))
			for h := 0; h < 2; h++ {
				t := 2*p + h
				src := xq[t*cols+b*32 : t*cols+b*32+32]
				d := xs[32*h : 32*h+32]
				if op == opMatVecI4Q8 {
					for k := 0; k < 16; k++ {
						d[k], d[16+k] = src[2*k], src[2*k+1]
					}
				} else {
					copy(d, src)
				}
				for l := 0; l < 8; l++ {
					s := int32(d[4*l]) + int32(d[4*l+1]) + int32(d[4*l+2]) + int32(d[4*l+3])
					neg[8*h+l] = -int32(off) * s
					xdv[8*h+l] = xd[t*nb+b]
				}
			}
		}
	}
}

// tiledBatch runs rows [r0, r1) of the batched block product b with the
// tiles over the packed pairs xp (tokens [0, nt), nt a multiple of 6) and
// the MatVec kernels for the rest.
func (b *batch) tiledRange(r0, r1 int) {
	rows, cols := b.rows, b.cols
	nb := cols / Q8Block
	_, bb := blockGeom(b.op)
	rowBytes := nb * bb
	ng := 0
	if b.gb > 0 {
		ng = (nb + b.gb - 1) / b.gb
	}
	nt := b.ntile * tileTokens
	tr := tileRowsNow()
	rt := max(tileRows, batchTile/max(rowBytes, 1)) &^ (tileRows - 1)
	tc := max(tileTokens, (256<<10)/(3*max(cols, 1))/tileTokens*tileTokens)
	for t0 := 0; t0 < nt; t0 += tc {
		t1 := min(nt, t0+tc)
		for ra := r0; ra < r1; ra += rt {
			rb := min(r1, ra+rt)
			r := ra
			for ; r+tr <= rb; r += tr {
				var ws *float32
				if ng > 0 {
					ws = &b.sw[r*ng]
				}
				for t := t0; t < t1; t += tileTokens {
					tileAsm(b.op, &b.out[t*rows+r], &b.wb[r*rowBytes], &b.xp[t/2*nb*packBlock], rows, nb, ws, b.gb, 4*ng)
				}
			}
			if r < rb {
				for t := t0; t < t1; t++ {
					blockRange(b.op, b.out[t*rows:(t+1)*rows], b.wb, b.sw, b.gb, b.qx[t*cols:(t+1)*cols], b.dx[t*nb:(t+1)*nb], nil, cols, r, rb)
				}
			}
		}
	}
	for t := nt; t < b.n; t++ {
		blockRange(b.op, b.out[t*rows:(t+1)*rows], b.wb, b.sw, b.gb, b.qx[t*cols:(t+1)*cols], b.dx[t*nb:(t+1)*nb], nil, cols, r0, r1)
	}
}

// i8TileOK reports whether the per-row int8 product (MatMulI8) of this
// shape takes the VNNI tiles: 4 rows × 6 tokens of 64-column VPDPBUSDs, the
// exact int sums scaled as matVecI8Range scales them.
func i8TileOK(rows, cols, n int) bool {
	return !noTiles && isa >= isaAVX512VNNI && cols%64 == 0 && cols > 0 && n >= tileTokens && rows >= tileRows
}

// packI8 writes Σ_c xq[t][c] for each token t < len(sums) (the tile takes
// 128 of each off its unsigned sums).
func packI8(sums []int32, xq []int8, cols int) {
	for t := range sums {
		var s int32
		for _, v := range xq[t*cols : (t+1)*cols] {
			s += int32(v)
		}
		sums[t] = s
	}
}

// i8TiledRange runs rows [r0, r1) of the batched MatMulI8 with the tiles
// (tokens below b.ntile·6) and matVecI8Range for the rest.
func (b *batch) i8TiledRange(r0, r1 int) {
	rows, cols := b.rows, b.cols
	xsum := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b.xp))), b.n)
	nt := b.ntile * tileTokens
	rt := max(tileRows, batchTile/cols) &^ (tileRows - 1)
	tc := max(tileTokens, (256<<10)/cols/tileTokens*tileTokens)
	for t0 := 0; t0 < nt; t0 += tc {
		t1 := min(nt, t0+tc)
		for ra := r0; ra < r1; ra += rt {
			rb := min(r1, ra+rt)
			r := ra
			for ; r+tileRows <= rb; r += tileRows {
				for t := t0; t < t1; t += tileTokens {
					i8TileAsm(&b.out[t*rows+r], &b.qw[r*cols], &b.qx[t*cols], cols, rows, &b.sw[r], &b.dx[t], &xsum[t])
				}
			}
			for t := t0; t < t1 && r < rb; t++ {
				matVecI8Range(b.out[t*rows:(t+1)*rows], b.qw, b.sw, b.qx[t*cols:(t+1)*cols], b.dx[t], cols, r, rb)
			}
		}
	}
	for t := nt; t < b.n; t++ {
		matVecI8Range(b.out[t*rows:(t+1)*rows], b.qw, b.sw, b.qx[t*cols:(t+1)*cols], b.dx[t], cols, r0, r1)
	}
}

// kTokens is the token width of the Q4_K, Q5_K and Q6_K tiles: one row × 4
// tokens, each 64 (AVX2: 32) weights unpacked once for the 4 tokens, each
// super-block ended for the 4 tokens at once in the lanes of one vector, in
// dotQ4KGo's (dotQ6KGo's) float steps.
const kTokens = 4

// kTileOK reports whether the batched op takes the K-quant tile (VNNI on
// zmm, or its AVX2 twin).
func kTileOK(op, n int) bool {
	return !noTiles && isa >= isaAVX2 && (op == opMatVecQ4K || op == opMatVecQ5K || op == opMatVecQ6K) && n >= kTokens
}

// kTiledRange runs rows [r0, r1) of the batched Q4_K, Q5_K or Q6_K product.
func (b *batch) kTiledRange(r0, r1 int) {
	rows, cols := b.rows, b.cols
	nb := cols / QK
	_, bb := blockGeom(b.op)
	rowBytes := nb * bb
	nt := b.n / kTokens * kTokens
	rt := max(1, batchTile/rowBytes)
	tc := max(kTokens, (256<<10)/cols/kTokens*kTokens)
	for t0 := 0; t0 < nt; t0 += tc {
		t1 := min(nt, t0+tc)
		for ra := r0; ra < r1; ra += rt {
			for r := ra; r < min(r1, ra+rt); r++ {
				for t := t0; t < t1; t += kTokens {
					kTileAsm(b.op, &b.out[t*rows+r], &b.wb[r*rowBytes], &b.qx[t*cols], &b.dx[t*nb], &b.xsum[t*cols/16], rows, nb, cols)
				}
			}
		}
	}
	for t := nt; t < b.n; t++ {
		blockRange(b.op, b.out[t*rows:(t+1)*rows], b.wb, nil, 0, b.qx[t*cols:(t+1)*cols], b.dx[t*nb:(t+1)*nb], b.xsum[t*cols/16:(t+1)*cols/16], cols, r0, r1)
	}
}
