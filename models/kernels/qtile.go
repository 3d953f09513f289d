package kernels

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"
)

// Register tiles of the batched per-row int8 (MatMulI8, VNNI) and K-quant
// products (AVX2 and VNNI), each bitwise its MatVec kernel per token. The
// 32-value-block formats (Q8_0, Q5_0, Q4_0, int4 groups) have their own
// interleaved layout and tiles (ilblock.go).

// noTiles turns the tiles off, so benchmarks can measure what they buy.
var noTiles = false

const (
	tileRows   = 4
	tileTokens = 6
)

type packBuf struct{ b []byte }

// packBufs holds MatMulI8's token-sum buffers, one per concurrent caller,
// reused so steady-state calls do not allocate.
var packBufs = sync.Pool{New: func() any { return new(packBuf) }}

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

// kTokens is the token width of the K-quant tiles (Q2_K to Q6_K): one row × 4
// tokens, each 64 (AVX2: 32) weights unpacked once for the 4 tokens, each
// super-block ended for the 4 tokens at once in the lanes of one vector, in
// dotQ4KGo's (dotQ6KGo's) float steps.
const kTokens = 4

// kTileOK reports whether the batched op takes the K-quant tile (VNNI on
// zmm, or its AVX2 twin).
func kTileOK(op, n int) bool {
	switch op {
	case opMatVecQ4K, opMatVecQ5K, opMatVecQ6K, opMatVecQ2K, opMatVecQ3K:
		return !noTiles && isa >= isaAVX2 && n >= kTokens
	}
	return false
}

// kTile8OK reports whether the batched op takes the 8-token Q4_K/Q5_K tiles
// for its first n/8·8 tokens: the 4-token tile spends about as much on each
// super-block's reductions and float steps as on its products.
func kTile8OK(op, n int) bool {
	return kTileOK(op, n) && isa >= isaAVX512VNNI && (op == opMatVecQ4K || op == opMatVecQ5K) && n >= 8
}

// k8Bytes is packK8's bytes per 8 tokens and super-block.
const k8Bytes = 160

// packK8 writes for each 8 tokens q (of n/8) and super-block bi the 160
// bytes at (q·nb+bi)·160 the 8-token tile reads: the tokens' xd (8
// float32), then [4][8][2] int16, [i][t][k] = the sum of the 32 values of
// sub-block 2i+k of token 8q+t (two of its sums of 16).
func packK8(dst []byte, dx []float32, xsum []int16, nb, n int) {
	for q := 0; q < n/8; q++ {
		for bi := 0; bi < nb; bi++ {
			blk := dst[(q*nb+bi)*k8Bytes : (q*nb+bi+1)*k8Bytes]
			for t := 0; t < 8; t++ {
				tok := 8*q + t
				binary.LittleEndian.PutUint32(blk[4*t:], math.Float32bits(dx[tok*nb+bi]))
				s := xsum[(tok*nb+bi)*16:]
				for j := 0; j < 8; j++ {
					binary.LittleEndian.PutUint16(blk[32+4*(8*(j/2)+t)+2*(j%2):], uint16(s[2*j]+s[2*j+1]))
				}
			}
		}
	}
}

// kTiledRange runs rows [r0, r1) of the batched Q4_K, Q5_K or Q6_K product:
// 8-token tiles where kTile8OK (b.xp from packK8), then 4-token tiles, then
// a row product per token for the last n%4.
func (b *batch) kTiledRange(r0, r1 int) {
	rows, cols := b.rows, b.cols
	nb := cols / QK
	_, bb := blockGeom(b.op)
	rowBytes := nb * bb
	nt8 := 0
	if b.xp != nil {
		nt8 = b.n / 8 * 8
	}
	nt := b.n / kTokens * kTokens
	rt := max(1, batchTile/rowBytes)
	tc := max(8, (256<<10)/cols/8*8)
	for t0 := 0; t0 < nt; t0 += tc {
		t1 := min(nt, t0+tc)
		for ra := r0; ra < r1; ra += rt {
			for r := ra; r < min(r1, ra+rt); r++ {
				t := t0
				for ; t+8 <= min(t1, nt8); t += 8 {
					kTile8Asm(b.op, &b.out[t*rows+r], &b.wb[r*rowBytes], &b.qx[t*cols], &b.xp[t/8*nb*k8Bytes], rows, nb, cols)
				}
				for ; t < t1; t += kTokens {
					kTileAsm(b.op, &b.out[t*rows+r], &b.wb[r*rowBytes], &b.qx[t*cols], &b.dx[t*nb], &b.xsum[t*cols/16], rows, nb, cols)
				}
			}
		}
	}
	for t := nt; t < b.n; t++ {
		blockRange(b.op, b.out[t*rows:(t+1)*rows], b.wb, b.qx[t*cols:(t+1)*cols], b.dx[t*nb:(t+1)*nb], b.xsum[t*cols/16:(t+1)*cols/16], cols, r0, r1)
	}
}
