//go:build !amd64 || purego

package kernels

import "unsafe"

// No pair tiles without the assembly.
const pairHasAsm = false

func pairTile(k wkind, ri, P int, out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int) {
	panic("kernels: no asm")
}

func rowPairs(out []float32, w unsafe.Pointer, n int, x []float32, cols, r, r1 int) int {
	return r
}
