//go:build !amd64 || purego

package kernels

import "unsafe"

// No assembly on this architecture (or the purego tag is set): every kernel
// runs its pure-Go version.
const (
	hasAsm     = false
	hostISA    = isaGo
	hasAVXVNNI = false
)

func spinPause() {}

func findAsm(x []float32, v float32) int { panic("kernels: no asm") }

func dotAsm(a, b []float32) float32                            { panic("kernels: no asm") }
func axpyAsm(alpha float32, x, y []float32)                    { panic("kernels: no asm") }
func matVecAsm(out, w, x []float32, cols, r0, r1 int)          { panic("kernels: no asm") }
func matMulAsm(out, w, x []float32, rows, cols, n, r0, r1 int) { panic("kernels: no asm") }

func i8DotsAsm(out []float32, w, x []int8, cols int) []int32 { panic("kernels: no asm") }
func blockDotsAsm(op int, out []float32, w []byte, xq []int8, xd []float32, xsums []int16, nb int) {
	panic("kernels: no asm")
}

func quantQ8KAsm(q []int8, d []float32, sums []int16, x []float32) { panic("kernels: no asm") }

func softmaxExpAsm(x []float32, m float32) float32 { panic("kernels: no asm") }

func swigluAsm(gate, up []float32) { panic("kernels: no asm") }

func maxAsm(x []float32) float32      { panic("kernels: no asm") }
func scaleAsm(x []float32, s float32) { panic("kernels: no asm") }

func scaleMulAsm(out, x, w []float32, s float32) { panic("kernels: no asm") }

func ropePairsAsm(x, c, s []float32) { panic("kernels: no asm") }

func ropeHalvesAsm(x1, x2, c, s []float32) { panic("kernels: no asm") }

func qfTileRows() int { return 2 }

func qfTileTokens() int { return 4 }

func qfMatVecAsm(q *qfProd, out []float32, w []byte, scale, x []float32, cols int) {
	panic("kernels: no asm")
}

func qfTileAsm(q *qfProd, out *float32, w unsafe.Pointer, scale, x *float32, cols, ldo int) {
	panic("kernels: no asm")
}

func l4TileRows() int { return 1 }

func l4MatVecAsm(l *l4Prod, out []float32, w unsafe.Pointer, scale *float32, x []float32) {
	panic("kernels: no asm")
}

func l4TileAsm(l *l4Prod, out *float32, w unsafe.Pointer, scale, x *float32) {
	panic("kernels: no asm")
}

func i8TileAsm(out *float32, w, x *int8, cols, ldo int, scale, xs *float32, xsum *int32) {
	panic("kernels: no asm")
}

func kTile8Asm(op int, out *float32, w *byte, x *int8, xp *byte, ldo, nb, cols int) {
	panic("kernels: no asm")
}

func kTileAsm(op int, out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int) {
	panic("kernels: no asm")
}

const ilkHasAsm = false

func (p *ilkProd) runAsm(g0, g1 int) { panic("kernels: no asm") }
