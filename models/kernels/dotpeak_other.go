//go:build !amd64 || purego

package kernels

func int8DotsAsm(steps int) [16]int32 { panic("kernels: no asm") }
