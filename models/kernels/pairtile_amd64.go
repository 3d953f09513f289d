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
func pairF16R1P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF16R1P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF16R1P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF16R1P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF16R4P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF16R4P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF16R4P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF16R4P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF16R6P1(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF16R6P2(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF16R6P3(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func pairF16R6P4(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)

//go:noescape
func rowPairF32(out *float32, w unsafe.Pointer, x *float32, cols, ws int)

//go:noescape
func rowPairF16(out *float32, w unsafe.Pointer, x *float32, cols, ws int)

// rowPairs computes rows [r, r1) of the float32 (eb 4) or f16 (eb 2) matvec
// 8 at a time with the AVX-512 row-pair kernel (two rows per zmm, each in
// MatVec's lanes and order) and returns the first row it left.
func rowPairs(out []float32, w unsafe.Pointer, eb int, x []float32, cols, r, r1 int) int {
	if isa < isaAVX512 || cols <= 0 {
		return r
	}
	for ; r+8 <= r1; r += 8 {
		if eb == 2 {
			rowPairF16(&out[r], unsafe.Add(w, r*cols*eb), unsafe.SliceData(x), cols, cols*eb)
		} else {
			rowPairF32(&out[r], unsafe.Add(w, r*cols*eb), unsafe.SliceData(x), cols, cols*eb)
		}
	}
	return r
}

// pairTiles are the tiles by weight type (f32, f16), row height (index in
// pairRows) and pairs - 1.
var pairTiles = [2][len(pairRows)][pairMaxP]func(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int){
	{
		{pairF32R6P1, pairF32R6P2, pairF32R6P3, pairF32R6P4},
		{pairF32R4P1, pairF32R4P2, pairF32R4P3, pairF32R4P4},
		{pairF32R1P1, pairF32R1P2, pairF32R1P3, pairF32R1P4},
	},
	{
		{pairF16R6P1, pairF16R6P2, pairF16R6P3, pairF16R6P4},
		{pairF16R4P1, pairF16R4P2, pairF16R4P3, pairF16R4P4},
		{pairF16R1P1, pairF16R1P2, pairF16R1P3, pairF16R1P4},
	},
}

// pairTile runs one tile: rows pairRows[ri] × P pairs.
func pairTile(f16 bool, ri, P int, out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int) {
	k := 0
	if f16 {
		k = 1
	}
	pairTiles[k][ri][P-1](out, w, xp, cols, ldo, ws, ps, odd)
}
