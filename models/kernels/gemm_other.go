//go:build !amd64 || purego

package kernels

// No GEMM tiles without the assembly: MatMul keeps its MatVec-based path.
const gemmHasAsm = false

var gemmAVX512 = false

func gemmTile(wide bool, out *float32, ldo, nt int, wr *float32, cols int, xp *float32, c *[gemmMaxTile]float32) {
	panic("kernels: no asm")
}
