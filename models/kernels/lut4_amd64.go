//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func l4MatVecAVX2(out *float32, w *byte, scale *float32, lut *[16]float32, x *float32, rows int, a *l4Args)

//go:noescape
func l4Tile1x4AVX2(out *float32, w *byte, scale *float32, lut *[16]float32, x *float32, a *l4Args)

//go:noescape
func l4MatVecAVX512(out *float32, w *byte, scale *float32, lut *[16]float32, x *float32, rows int, a *l4Args)

//go:noescape
func l4Tile2x4AVX512(out *float32, w *byte, scale *float32, lut *[16]float32, x *float32, a *l4Args)

// l4TileRows is the weight rows of the batched tile in use.
func l4TileRows() int {
	if isa >= isaAVX512 {
		return 2
	}
	return 1
}

// l4MatVecAsm computes len(out) rows; w and scale start at the first; cols >= 8.
func l4MatVecAsm(l *l4Prod, out []float32, w unsafe.Pointer, scale *float32, x []float32) {
	if isa >= isaAVX512 {
		l4MatVecAVX512(unsafe.SliceData(out), (*byte)(w), scale, l.lut, unsafe.SliceData(x), len(out), &l.a)
		return
	}
	l4MatVecAVX2(unsafe.SliceData(out), (*byte)(w), scale, l.lut, unsafe.SliceData(x), len(out), &l.a)
}

// l4TileAsm runs one batched tile: l4TileRows() rows × l4Tokens tokens into
// out[t*ldo+r]; cols is a positive multiple of 32.
func l4TileAsm(l *l4Prod, out *float32, w unsafe.Pointer, scale, x *float32) {
	if isa >= isaAVX512 {
		l4Tile2x4AVX512(out, (*byte)(w), scale, l.lut, x, &l.a)
		return
	}
	l4Tile1x4AVX2(out, (*byte)(w), scale, l.lut, x, &l.a)
}
