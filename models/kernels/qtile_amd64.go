//go:build amd64 && !purego

package kernels

//go:noescape
func i8TileVNNI512(out *float32, w *int8, x *int8, cols, ldo int, scale, xs *float32, xsum *int32)

func i8TileAsm(out *float32, w, x *int8, cols, ldo int, scale, xs *float32, xsum *int32) {
	i8TileVNNI512(out, w, x, cols, ldo, scale, xs, xsum)
}

//go:noescape
func q4kTileVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)

//go:noescape
func q4kTileAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)

//go:noescape
func q5kTileVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)

//go:noescape
func q5kTileAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)

//go:noescape
func q6kTileVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)

//go:noescape
func q6kTileAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)

//go:noescape
func q2kTileVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)

//go:noescape
func q3kTileVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)

//go:noescape
func q2kTileAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)

//go:noescape
func q3kTileAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)

//go:noescape
func q4kTile8VNNI512(out *float32, w *byte, x *int8, xp *byte, ldo, nb, cols int)

//go:noescape
func q5kTile8VNNI512(out *float32, w *byte, x *int8, xp *byte, ldo, nb, cols int)

// kTile8Asm runs one 8-token K-quant tile (kTile8OK).
func kTile8Asm(op int, out *float32, w *byte, x *int8, xp *byte, ldo, nb, cols int) {
	if op == opMatVecQ5K {
		q5kTile8VNNI512(out, w, x, xp, ldo, nb, cols)
		return
	}
	q4kTile8VNNI512(out, w, x, xp, ldo, nb, cols)
}

// kTileAsm runs one K-quant tile (kTileOK): one row × kTokens tokens.
func kTileAsm(op int, out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int) {
	switch {
	case op == opMatVecQ2K && isa >= isaAVX512VNNI:
		q2kTileVNNI512(out, w, x, xd, xs, ldo, nb, cols)
	case op == opMatVecQ3K && isa >= isaAVX512VNNI:
		q3kTileVNNI512(out, w, x, xd, xs, ldo, nb, cols)
	case op == opMatVecQ2K:
		q2kTileAVX2(out, w, x, xd, xs, ldo, nb, cols)
	case op == opMatVecQ3K:
		q3kTileAVX2(out, w, x, xd, xs, ldo, nb, cols)
	case op == opMatVecQ6K && isa >= isaAVX512VNNI:
		q6kTileVNNI512(out, w, x, xd, xs, ldo, nb, cols)
	case op == opMatVecQ6K:
		q6kTileAVX2(out, w, x, xd, xs, ldo, nb, cols)
	case op == opMatVecQ5K && isa >= isaAVX512VNNI:
		q5kTileVNNI512(out, w, x, xd, xs, ldo, nb, cols)
	case op == opMatVecQ5K:
		q5kTileAVX2(out, w, x, xd, xs, ldo, nb, cols)
	case isa >= isaAVX512VNNI:
		q4kTileVNNI512(out, w, x, xd, xs, ldo, nb, cols)
	default:
		q4kTileAVX2(out, w, x, xd, xs, ldo, nb, cols)
	}
}
