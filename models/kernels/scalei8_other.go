//go:build !amd64 || purego

package kernels

func scaleI8Asm(dst []float32, q []int8, s float32) { scaleI8Go(dst, q, s) }
