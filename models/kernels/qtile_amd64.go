//go:build amd64 && !purego

package kernels

//go:noescape
func q40TileVNNI512(out *float32, w *byte, xp *byte, ldo, nb int, ws *float32, gb, sstride int)

//go:noescape
func q50TileVNNI512(out *float32, w *byte, xp *byte, ldo, nb int, ws *float32, gb, sstride int)

//go:noescape
func q80bTileVNNI512(out *float32, w *byte, xp *byte, ldo, nb int, ws *float32, gb, sstride int)

//go:noescape
func i4q8TileVNNI512(out *float32, w *byte, xp *byte, ldo, nb int, ws *float32, gb, sstride int)

//go:noescape
func q40TileAVX2(out *float32, w *byte, xp *byte, ldo, nb int, ws *float32, gb, sstride int)

//go:noescape
func q80bTileAVX2(out *float32, w *byte, xp *byte, ldo, nb int, ws *float32, gb, sstride int)

//go:noescape
func i4q8TileAVX2(out *float32, w *byte, xp *byte, ldo, nb int, ws *float32, gb, sstride int)

// tileAsm runs one tileRowsNow()-row × 6-token tile of op (tileOff(op) > 0).
func tileAsm(op int, out *float32, w, xp *byte, ldo, nb int, ws *float32, gb, sstride int) {
	if isa < isaAVX512VNNI {
		switch op {
		case opMatVecQ4_0:
			q40TileAVX2(out, w, xp, ldo, nb, ws, gb, sstride)
		case opMatVecQ8B:
			q80bTileAVX2(out, w, xp, ldo, nb, ws, gb, sstride)
		case opMatVecI4Q8:
			i4q8TileAVX2(out, w, xp, ldo, nb, ws, gb, sstride)
		}
		return
	}
	switch op {
	case opMatVecQ4_0:
		q40TileVNNI512(out, w, xp, ldo, nb, ws, gb, sstride)
	case opMatVecQ5_0:
		q50TileVNNI512(out, w, xp, ldo, nb, ws, gb, sstride)
	case opMatVecQ8B:
		q80bTileVNNI512(out, w, xp, ldo, nb, ws, gb, sstride)
	case opMatVecI4Q8:
		i4q8TileVNNI512(out, w, xp, ldo, nb, ws, gb, sstride)
	}
}

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

// kTileAsm runs one K-quant tile (kTileOK): one row × kTokens tokens.
func kTileAsm(op int, out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int) {
	switch {
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
