//go:build !amd64 || purego

package kernels

// No GEMM tiles without the assembly: MatMul keeps its MatVec-based path.
const gemmHasAsm = false

func gemmTile(wide bool, out *float32, ldo, nt int, wr *float32, cols int, xp *float32, c *[gemmMaxTile]float32) {
	panic("kernels: no asm")
}

func gemmPack8(dst []float32, pw int, src []float32, cols int) { panic("kernels: no asm") }
