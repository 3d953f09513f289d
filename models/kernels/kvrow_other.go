//go:build !amd64 || purego

package kernels

func absMaxAsm(x []float32) (float32, bool) { panic("kernels: no asm") }

func divRoundI8Asm(q []int8, x []float32, s float32) { panic("kernels: no asm") }

func divEncodeE4M3Asm(q []uint8, x []float32, s float32) { panic("kernels: no asm") }

func divRoundInt4Asm(packed []byte, x []float32, s float32) { panic("kernels: no asm") }
