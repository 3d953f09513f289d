//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func torchSwiGLUAVX2(gate, up *float32, n int) int

// torchSwiGLUAsm runs groups of four (len(up) a multiple of 4) until one
// has a value outside ±700 or NaN, and returns how many it did.
func torchSwiGLUAsm(gate, up []float32) int {
	return torchSwiGLUAVX2(unsafe.SliceData(gate), unsafe.SliceData(up), len(up))
}
