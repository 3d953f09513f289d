//go:build amd64 && !purego

package kernels

import "unsafe"

const pairHasAsm = true

//go:noescape
func pairF32R1P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF32R1P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF32R1P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF32R1P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF32R4P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF32R4P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF32R4P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF32R4P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF32R6P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF32R6P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF32R6P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF32R6P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R1P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R1P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R1P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R1P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R4P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R4P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R4P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R4P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R6P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R6P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R6P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILF16R6P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R1P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R1P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R1P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R1P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R4P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R4P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R4P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R4P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R6P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R6P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R6P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairILBF16R6P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func rowPairF32(out *float32, w unsafe.Pointer, x *float32, cols, ws int)

// rowPairs computes rows [r, r1) of the float32 matvec 8 at a time with
// the AVX-512 row-pair kernel (two rows per zmm, each in MatVec's lanes and
// order) and returns the first row it left. w holds n weights. It only takes
// rows of 2 KiB or more of matrices of 2 MiB or more (whatever part of it
// one thread has): its prefetch 4 KiB ahead of each row pays when the
// weights stream from memory and the rows are long enough for it to reach
// the next block (bench110M-f32 decode +7%); on short rows or a cached
// matrix the AVX2 matvec is faster (bench15M-f32 decode −15% with its
// 32000×288 classifier here).
func rowPairs(out []float32, w unsafe.Pointer, n int, x []float32, cols, r, r1 int) int {
	if isa < isaAVX512 || cols*4 < 2048 || n*4 < 2<<20 {
		return r
	}
	for ; r+8 <= r1; r += 8 {
		rowPairF32(&out[r], unsafe.Add(w, r*cols*4), unsafe.SliceData(x), cols, cols*4)
	}
	return r
}

// pairTiles are the float32 tiles by row height (index in pairRows) and
// pairs - 1.
var pairTiles = [len(pairRows)][pairMaxP]func(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int){
	{pairF32R6P1, pairF32R6P2, pairF32R6P3, pairF32R6P4},
	{pairF32R4P1, pairF32R4P2, pairF32R4P3, pairF32R4P4},
	{pairF32R1P1, pairF32R1P2, pairF32R1P3, pairF32R1P4},
}

// pairILTiles are the tiles of interleaved f16 and bf16 weights (f16il.go),
// as pairTiles.
var pairILTiles = [2][len(pairRows)][pairMaxP]func(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int){
	{
		{pairILF16R6P1, pairILF16R6P2, pairILF16R6P3, pairILF16R6P4},
		{pairILF16R4P1, pairILF16R4P2, pairILF16R4P3, pairILF16R4P4},
		{pairILF16R1P1, pairILF16R1P2, pairILF16R1P3, pairILF16R1P4},
	},
	{
		{pairILBF16R6P1, pairILBF16R6P2, pairILBF16R6P3, pairILBF16R6P4},
		{pairILBF16R4P1, pairILBF16R4P2, pairILBF16R4P3, pairILBF16R4P4},
		{pairILBF16R1P1, pairILBF16R1P2, pairILBF16R1P3, pairILBF16R1P4},
	},
}

// pairTile runs one tile: rows pairRows[ri] × P pairs of weights of kind k
// (f16 and bf16 interleaved).
func pairTile(k wkind, ri, P int, out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int) {
	if k == wF32 {
		pairTiles[ri][P-1](out, w, xp, cols, ldo, ws, ps, odd)
		return
	}
	pairILTiles[k-wF16][ri][P-1](out, w, xp, cols, ldo, ws, ps, odd)
}
