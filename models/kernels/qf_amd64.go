//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func e4m3MatVecAVX2(out *float32, w *byte, scale, x *float32, rows, cols int, p *fp8Params)

//go:noescape
func e4m3Tile2x4AVX2(out *float32, w *byte, scale, x *float32, cols, ldo int, p *fp8Params)

//go:noescape
func e4m3MatVecAVX512(out *float32, w *byte, scale, x *float32, rows, cols int, p *fp8Params)

//go:noescape
func e4m3Tile4x4AVX512(out *float32, w *byte, scale, x *float32, cols, ldo int, p *fp8Params)

//go:noescape
func e5m2MatVecAVX2(out *float32, w *byte, scale, x *float32, rows, cols int, p *fp8Params)

//go:noescape
func e5m2Tile2x4AVX2(out *float32, w *byte, scale, x *float32, cols, ldo int, p *fp8Params)

//go:noescape
func e5m2MatVecAVX512(out *float32, w *byte, scale, x *float32, rows, cols int, p *fp8Params)

//go:noescape
func e5m2Tile4x4AVX512(out *float32, w *byte, scale, x *float32, cols, ldo int, p *fp8Params)

//go:noescape
func i8f32MatVecAVX2(out *float32, w *byte, scale, x *float32, rows, cols int)

//go:noescape
func i8f32Tile2x4AVX2(out *float32, w *byte, scale, x *float32, cols, ldo int)

//go:noescape
func i8f32MatVecAVX512(out *float32, w *byte, scale, x *float32, rows, cols int)

//go:noescape
func i8f32Tile4x4AVX512(out *float32, w *byte, scale, x *float32, cols, ldo int)

// qfTileRows and qfTileTokens are the shape of the batched tile in use.
func qfTileRows() int {
	if isa >= isaAVX512 {
		return 4
	}
	return 2
}

func qfTileTokens() int { return 4 }

// qfMatVecAsm computes len(out) rows; w and scale start at the first; cols >= 8.
func qfMatVecAsm(q *qfProd, out []float32, w []byte, scale, x []float32, cols int) {
	o, wp, s, xp, n := unsafe.SliceData(out), unsafe.SliceData(w), unsafe.SliceData(scale), unsafe.SliceData(x), len(out)
	switch p := q.fmt.fp8; {
	case p != nil && p.shift == 7 && isa >= isaAVX512:
		e4m3MatVecAVX512(o, wp, s, xp, n, cols, p)
	case p != nil && p.shift == 7:
		e4m3MatVecAVX2(o, wp, s, xp, n, cols, p)
	case p != nil && isa >= isaAVX512:
		e5m2MatVecAVX512(o, wp, s, xp, n, cols, p)
	case p != nil:
		e5m2MatVecAVX2(o, wp, s, xp, n, cols, p)
	case isa >= isaAVX512:
		i8f32MatVecAVX512(o, wp, s, xp, n, cols)
	default:
		i8f32MatVecAVX2(o, wp, s, xp, n, cols)
	}
}

// qfTileAsm runs one batched tile: qfTileRows() rows from w ×
// qfTileTokens() tokens from x, into out[t*ldo+r]; cols is a positive multiple of 8.
func qfTileAsm(q *qfProd, out *float32, w unsafe.Pointer, scale, x *float32, cols, ldo int) {
	wp := (*byte)(w)
	switch p := q.fmt.fp8; {
	case p != nil && p.shift == 7 && isa >= isaAVX512:
		e4m3Tile4x4AVX512(out, wp, scale, x, cols, ldo, p)
	case p != nil && p.shift == 7:
		e4m3Tile2x4AVX2(out, wp, scale, x, cols, ldo, p)
	case p != nil && isa >= isaAVX512:
		e5m2Tile4x4AVX512(out, wp, scale, x, cols, ldo, p)
	case p != nil:
		e5m2Tile2x4AVX2(out, wp, scale, x, cols, ldo, p)
	case isa >= isaAVX512:
		i8f32Tile4x4AVX512(out, wp, scale, x, cols, ldo)
	default:
		i8f32Tile2x4AVX2(out, wp, scale, x, cols, ldo)
	}
}
