//go:build !amd64 || purego

package kernels

func scaleI8Asm(dst []float32, q []int8, s float32) { scaleI8Go(dst, q, s) }

func scaleI8RowsAsm(dst []float32, q []int8, sc []float32, d int) { panic("kernels: no asm") }

func absMaxAsm(x []float32) (float32, bool) { panic("kernels: no asm") }

func divRoundI8Asm(q []int8, x []float32, s float32) { panic("kernels: no asm") }

func divEncodeE4M3Asm(q []uint8, x []float32, s float32) { panic("kernels: no asm") }
