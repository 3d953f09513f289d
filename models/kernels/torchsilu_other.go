//go:build !amd64 || purego

package kernels

func torchSwiGLUAsm(gate, up []float32) int { panic("kernels: no asm") }
