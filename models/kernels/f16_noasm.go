//go:build !amd64 || purego

package kernels

func matVecHalfILAsm(k wkind, out []float32, w []uint16, x []float32, cols, ng int) {
	panic("kernels: no asm")
}

func matMulHalfILAsm(k wkind, out []float32, w []uint16, x []float32, rows, cols, n, r0, r1 int) {
	panic("kernels: no asm")
}

func widenHalfILAsm(k wkind, dst []float32, src []uint16, nc, rows, ldd int) {
	panic("kernels: no asm")
}

func widenF16Asm(dst []float32, src []uint16) { panic("kernels: no asm") }

func roundF16Asm(dst, src []float32) { panic("kernels: no asm") }

func narrowF16Asm(dst []uint16, src []float32) { panic("kernels: no asm") }

func roundBF16Asm(dst, src []float32) { panic("kernels: no asm") }
