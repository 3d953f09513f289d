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
