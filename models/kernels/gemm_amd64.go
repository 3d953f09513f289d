//go:build amd64 && !purego

package kernels

// gemmAVX512 (isa.go) selects the AVX-512 tiles (12 rows × 32 or 16 tokens
// in zmm) over the AVX2 ones (6 rows × 16 or 12 rows × 8 tokens in ymm).
// CHAT_KERNELS=avx2 forces the AVX2 tiles, so both can be tested on an
// AVX-512 machine.

const gemmHasAsm = true

//go:noescape
func gemm12x32AVX512(out *float32, ldo, nt int, w *float32, ldw int, xp *float32, k int, c *float32)

//go:noescape
func gemm12x16AVX512(out *float32, ldo, nt int, w *float32, ldw int, xp *float32, k int, c *float32)

//go:noescape
func gemm6x16AVX2(out *float32, ldo, nt int, w *float32, ldw int, xp *float32, k int, c *float32)

//go:noescape
func gemm12x8AVX2(out *float32, ldo, nt int, w *float32, ldw int, xp *float32, k int, c *float32)

//go:noescape
func gemmPack8AVX2(dst *float32, pw int, src *float32, cols, nk int)

// gemmPack8 packs tokens [0, 8) × columns [0, cols&^7) of src (rows cols
// apart) into the panel dst, pw wide; see packPanels.
func gemmPack8(dst []float32, pw int, src []float32, cols int) {
	gemmPack8AVX2(&dst[0], pw, &src[0], cols, cols/8)
}

// gemmTile runs one register tile: gemmTileRows(wide) rows of w from wr
// against the packed panel xp (nr tokens wide, or nr/2 if !wide), writing the
// first nt tokens' outputs to out[t*ldo+i]. c is scratch for the tile.
func gemmTile(wide bool, out *float32, ldo, nt int, wr *float32, cols int, xp *float32, c *[gemmMaxTile]float32) {
	switch {
	case gemmAVX512 && wide:
		gemm12x32AVX512(out, ldo, nt, wr, cols, xp, cols, &c[0])
	case gemmAVX512:
		gemm12x16AVX512(out, ldo, nt, wr, cols, xp, cols, &c[0])
	case wide:
		gemm6x16AVX2(out, ldo, nt, wr, cols, xp, cols, &c[0])
	default:
		gemm12x8AVX2(out, ldo, nt, wr, cols, xp, cols, &c[0])
	}
}
