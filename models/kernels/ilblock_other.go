//go:build !amd64 || purego

package kernels

// No interleaved tiles without the assembly: the Go reference runs.
const ilHasAsm = false

func (p *ilProd) runAsm(g0, g1 int) { p.runGo(g0, g1) }

func ilQuantAsm(a *ILAct, x []float32, t int) { panic("kernels: no asm") }
