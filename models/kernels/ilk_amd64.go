//go:build amd64 && !purego

package kernels

const ilkHasAsm = true

//go:noescape
func il4kT1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4kT2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4kT3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4kT4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4kT5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4kT6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4kT7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4kT8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il5kT1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il5kT2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il5kT3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il5kT4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il5kT5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il5kT6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il5kT7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il5kT8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il6kT1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il6kT2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il6kT3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il6kT4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il6kT5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il6kT6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il6kT7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il6kT8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4xsT1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4xsT2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4xsT3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4xsT4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4xsT5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4xsT6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4xsT7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il4xsT8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il2kT1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il2kT2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il2kT3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il2kT4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il2kT5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il2kT6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il2kT7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il2kT8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il3kT1VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il3kT2VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il3kT3VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il3kT4VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il3kT5VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il3kT6VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il3kT7VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

//go:noescape
func il3kT8VNNI(out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32)

// ilkTile runs kind k's T-token tile (direct calls, so that facc stays on
// the caller's stack).
func ilkTile(k ILKKind, T int, out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32) {
	switch k {
	case IL4K:
		switch T {
		case 1:
			il4kT1VNNI(out, w, nb, xa, ldo, facc)
		case 2:
			il4kT2VNNI(out, w, nb, xa, ldo, facc)
		case 3:
			il4kT3VNNI(out, w, nb, xa, ldo, facc)
		case 4:
			il4kT4VNNI(out, w, nb, xa, ldo, facc)
		case 5:
			il4kT5VNNI(out, w, nb, xa, ldo, facc)
		case 6:
			il4kT6VNNI(out, w, nb, xa, ldo, facc)
		case 7:
			il4kT7VNNI(out, w, nb, xa, ldo, facc)
		case 8:
			il4kT8VNNI(out, w, nb, xa, ldo, facc)
		}
	case IL5K:
		switch T {
		case 1:
			il5kT1VNNI(out, w, nb, xa, ldo, facc)
		case 2:
			il5kT2VNNI(out, w, nb, xa, ldo, facc)
		case 3:
			il5kT3VNNI(out, w, nb, xa, ldo, facc)
		case 4:
			il5kT4VNNI(out, w, nb, xa, ldo, facc)
		case 5:
			il5kT5VNNI(out, w, nb, xa, ldo, facc)
		case 6:
			il5kT6VNNI(out, w, nb, xa, ldo, facc)
		case 7:
			il5kT7VNNI(out, w, nb, xa, ldo, facc)
		case 8:
			il5kT8VNNI(out, w, nb, xa, ldo, facc)
		}
	case IL6K:
		switch T {
		case 1:
			il6kT1VNNI(out, w, nb, xa, ldo, facc)
		case 2:
			il6kT2VNNI(out, w, nb, xa, ldo, facc)
		case 3:
			il6kT3VNNI(out, w, nb, xa, ldo, facc)
		case 4:
			il6kT4VNNI(out, w, nb, xa, ldo, facc)
		case 5:
			il6kT5VNNI(out, w, nb, xa, ldo, facc)
		case 6:
			il6kT6VNNI(out, w, nb, xa, ldo, facc)
		case 7:
			il6kT7VNNI(out, w, nb, xa, ldo, facc)
		case 8:
			il6kT8VNNI(out, w, nb, xa, ldo, facc)
		}
	case IL4XS:
		switch T {
		case 1:
			il4xsT1VNNI(out, w, nb, xa, ldo, facc)
		case 2:
			il4xsT2VNNI(out, w, nb, xa, ldo, facc)
		case 3:
			il4xsT3VNNI(out, w, nb, xa, ldo, facc)
		case 4:
			il4xsT4VNNI(out, w, nb, xa, ldo, facc)
		case 5:
			il4xsT5VNNI(out, w, nb, xa, ldo, facc)
		case 6:
			il4xsT6VNNI(out, w, nb, xa, ldo, facc)
		case 7:
			il4xsT7VNNI(out, w, nb, xa, ldo, facc)
		case 8:
			il4xsT8VNNI(out, w, nb, xa, ldo, facc)
		}
	case IL2K:
		switch T {
		case 1:
			il2kT1VNNI(out, w, nb, xa, ldo, facc)
		case 2:
			il2kT2VNNI(out, w, nb, xa, ldo, facc)
		case 3:
			il2kT3VNNI(out, w, nb, xa, ldo, facc)
		case 4:
			il2kT4VNNI(out, w, nb, xa, ldo, facc)
		case 5:
			il2kT5VNNI(out, w, nb, xa, ldo, facc)
		case 6:
			il2kT6VNNI(out, w, nb, xa, ldo, facc)
		case 7:
			il2kT7VNNI(out, w, nb, xa, ldo, facc)
		case 8:
			il2kT8VNNI(out, w, nb, xa, ldo, facc)
		}
	case IL3K:
		switch T {
		case 1:
			il3kT1VNNI(out, w, nb, xa, ldo, facc)
		case 2:
			il3kT2VNNI(out, w, nb, xa, ldo, facc)
		case 3:
			il3kT3VNNI(out, w, nb, xa, ldo, facc)
		case 4:
			il3kT4VNNI(out, w, nb, xa, ldo, facc)
		case 5:
			il3kT5VNNI(out, w, nb, xa, ldo, facc)
		case 6:
			il3kT6VNNI(out, w, nb, xa, ldo, facc)
		case 7:
			il3kT7VNNI(out, w, nb, xa, ldo, facc)
		case 8:
			il3kT8VNNI(out, w, nb, xa, ldo, facc)
		}
	}
}

// runAsm computes row groups [g0, g1) with the VNNI tiles, 8 tokens at a
// time; a last, partial group goes through a buffer.
func (p *ilkProd) runAsm(g0, g1 int) {
	nb := p.cols / QK
	f := &ilkFormats[p.k]
	bb, act := ILRows*f.bb, f.act
	var facc [2 * 8 * ILRows]float32
	var tail [8 * ILRows]float32
	for g := g0; g < g1; g++ {
		w := &p.w[g*nb*bb]
		r0 := g * ILRows
		full := r0+ILRows <= p.rows
		for t0 := 0; t0 < p.n; t0 += 8 {
			T := min(8, p.n-t0)
			xa := &p.xa[t0/8*nb*act]
			if full {
				ilkTile(p.k, T, &p.out[t0*p.rows+r0], w, nb, xa, p.rows, &facc[0])
				continue
			}
			ilkTile(p.k, T, &tail[0], w, nb, xa, ILRows, &facc[0])
			for t := 0; t < T; t++ {
				copy(p.out[(t0+t)*p.rows+r0:(t0+t+1)*p.rows], tail[t*ILRows:])
			}
		}
	}
}
