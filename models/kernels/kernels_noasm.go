//go:build !amd64 || purego

package kernels

// No assembly on this architecture (or the purego tag is set): every kernel
// runs its pure-Go version.
const hasAsm = false

const asmName = "go"

func spinPause() {}

func dotAsm(a, b []float32) float32                            { panic("kernels: no asm") }
func sumAsm(a []float32) float32                               { panic("kernels: no asm") }
func axpyAsm(alpha float32, x, y []float32)                    { panic("kernels: no asm") }
func matVecAsm(out, w, x []float32, cols, r0, r1 int)          { panic("kernels: no asm") }
func matMulAsm(out, w, x []float32, rows, cols, n, r0, r1 int) { panic("kernels: no asm") }
