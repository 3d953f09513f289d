//go:build !amd64 || purego

package kernels

func scaleI8Asm(dst []float32, q []int8, s float32) { scaleI8Go(dst, q, s) }

func scaleI8RowsAsm(dst []float32, q []int8, sc []float32, d int) { panic("kernels: no asm") }
