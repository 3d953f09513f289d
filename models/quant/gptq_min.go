package quant

import (
	"fmt"
	"math"
	"slices"

	"chat/models/kernels"
)

// Int4MinCodes is a row-major [Rows][Cols] int4-group matrix with a scale
// and a minimum per group (asymmetric, the original GPTQ code's default
// sym=False, and ggml's Q4_1): codes q in [0, 15], weight
// float32(float32(q)·d) + m. Codes sit as in Int4Codes (two per byte, low
// nibble first, row r at byte r·⌈Cols/2⌉); D and M are [Rows][⌈Cols/Group⌉]
// and hold values an IEEE half represents exactly (they are stored so).
type Int4MinCodes struct {
	Rows, Cols, Group int
	Packed            []byte
	D, M              []float32
}

// minValue is the weight of code q in a group of scale d and minimum m.
func minValue(q int, d, m float32) float32 { return float32(float32(q)*d) + m }

// Dequantize returns the weights, [Rows][Cols].
func (m *Int4MinCodes) Dequantize() []float32 {
	rb, ng := (m.Cols+1)/2, (m.Cols+m.Group-1)/m.Group
	out := make([]float32, m.Rows*m.Cols)
	for r := 0; r < m.Rows; r++ {
		for c := 0; c < m.Cols; c++ {
			k := r*ng + c/m.Group
			out[r*m.Cols+c] = minValue(int(m.Packed[r*rb+c/2]>>(4*(c&1))&15), m.D[k], m.M[k])
		}
	}
	return out
}

// half rounds v to the nearest IEEE half.
func half(v float64) float32 {
	var b [1]float32
	kernels.RoundF16(b[:], []float32{float32(v)})
	return b[0]
}

// minCode is the code of w in a group of scale d and minimum m.
func minCode(w float64, d, m float32) int {
	if d == 0 {
		return 0
	}
	return int(max(0, min(15, math.RoundToEven((w-float64(m))/float64(d)))))
}

// GPTQMin is GPTQ (same algorithm, options and refit) into asymmetric int4
// groups (Int4MinCodes): each group's scale and minimum are searched over
// clipping both ends of its range, scored by the error the group's own
// column loop adds to the objective; after the loop the scales and minima
// of each row are refit together by least squares to the codes.
func GPTQMin(w []float32, rows, cols int, x []float32, n int, opt GPTQOptions) (*Int4MinCodes, error) {
	g := opt.Group
	if g != 32 && g != 64 && g != 128 {
		return nil, fmt.Errorf("quant: gptq: group size %d, want 32, 64 or 128", g)
	}
	W, h, U, bs, err := gptqPrepare("gptq", w, rows, cols, x, n, opt)
	if err != nil {
		return nil, err
	}
	m := gptqMinPass(slices.Clone(W), U, rows, cols, g, bs)
	refit := refitMin(m, W, h)
	if hError(refit.Dequantize(), W, h, rows, cols) < hError(m.Dequantize(), W, h, rows, cols) {
		m = refit
	}
	return m, nil
}

// gptqMinPass is gptqPass into Int4MinCodes.
func gptqMinPass(W, U []float64, rows, cols, g, bs int) *Int4MinCodes {
	rb, ng := (cols+1)/2, (cols+g-1)/g
	m := &Int4MinCodes{Rows: rows, Cols: cols, Group: g, Packed: make([]byte, rows*rb),
		D: make([]float32, rows*ng), M: make([]float32, rows*ng)}
	errs := make([]float64, rows*bs)
	for i1 := 0; i1 < cols; i1 += bs {
		i2 := min(i1+bs, cols)
		for i := i1; i < i2; i++ {
			if i%g == 0 {
				for r := 0; r < rows; r++ {
					k := r*ng + i/g
					m.D[k], m.M[k] = groupMin(W[r*cols+i:r*cols+min(i+g, cols)], U, i, cols)
				}
			}
			d := U[i*cols+i]
			ui := U[i*cols+i+1 : i*cols+i2]
			for r := 0; r < rows; r++ {
				wr := W[r*cols : (r+1)*cols]
				k := r*ng + i/g
				q := minCode(wr[i], m.D[k], m.M[k])
				m.Packed[r*rb+i/2] |= byte(q) << (4 * (i & 1))
				e := (wr[i] - float64(minValue(q, m.D[k], m.M[k]))) / d
				errs[r*bs+i-i1] = e
				for j, u := range ui {
					wr[i+1+j] -= e * u
				}
			}
		}
		if i2 == cols {
			break
		}
		for r := 0; r < rows; r++ {
			wr := W[r*cols+i2 : (r+1)*cols]
			for k := i1; k < i2; k++ {
				e := errs[r*bs+k-i1]
				if e == 0 {
					continue
				}
				for j, u := range U[k*cols+i2 : (k+1)*cols] {
					wr[j] -= e * u
				}
			}
		}
	}
	return m
}

// minClipSteps: each end of a group's range is pulled in by 0, 1, ...,
// minClipSteps steps of 1/80 of the range.
const minClipSteps = 16

// groupMin is the scale and minimum (halves) for the group of error-
// updated weights v that add the least to GPTQ's objective, as groupScale
// scores them, over a grid that clips either end of [min v, max v].
func groupMin(v, U []float64, i, cols int) (float32, float32) {
	lo, hi := slices.Min(v), slices.Max(v)
	if hi == lo {
		return 0, half(lo)
	}
	r := hi - lo
	var bd, bm float32
	bestErr := math.Inf(1)
	tmp := make([]float64, len(v))
	for a := 0; a <= minClipSteps; a++ {
		for b := 0; b <= minClipSteps; b++ {
			l, u := lo+r*float64(a)/80, hi-r*float64(b)/80
			d, m := half((u-l)/15), half(l)
			copy(tmp, v)
			var e float64
			for j, x := range tmp {
				q := minCode(x, d, m)
				dj := (x - float64(minValue(q, d, m))) / U[(i+j)*cols+i+j]
				if e += dj * dj; e >= bestErr {
					break
				}
				for jj, uu := range U[(i+j)*cols+i+j+1 : (i+j)*cols+i+len(v)] {
					tmp[j+1+jj] -= dj * uu
				}
			}
			if e < bestErr {
				bd, bm, bestErr = d, m, e
			}
		}
	}
	return bd, bm
}

// refitMin returns m with each row's scales and minima refit to its codes
// by least squares, minimizing (w−ŵ)·h·(w−ŵ)ᵀ (a tiny ridge towards the
// current values keeps groups whose codes are all equal solvable), then
// rounded to halves.
func refitMin(m *Int4MinCodes, W, h []float64) *Int4MinCodes {
	rows, cols, g := m.Rows, m.Cols, m.Group
	rb, ng := (cols+1)/2, (cols+g-1)/g
	out := &Int4MinCodes{Rows: rows, Cols: cols, Group: g, Packed: m.Packed, D: slices.Clone(m.D), M: slices.Clone(m.M)}
	q := make([]float64, cols)
	hq := make([]float64, cols*ng) // [i][k]: Σ_{j in group k} h[i][j]·q[j]
	h1 := make([]float64, cols*ng) // [i][k]: Σ_{j in group k} h[i][j]
	n := 2 * ng                    // unknowns: d_0..d_{ng-1}, m_0..m_{ng-1}
	A := make([]float64, n*n)
	b := make([]float64, n)
	for r := 0; r < rows; r++ {
		for c := range q {
			q[c] = float64(m.Packed[r*rb+c/2] >> (4 * (c & 1)) & 15)
		}
		clear(hq)
		clear(h1)
		clear(A)
		clear(b)
		for i := 0; i < cols; i++ {
			var hw float64
			for j, v := range h[i*cols : (i+1)*cols] {
				hq[i*ng+j/g] += v * q[j]
				h1[i*ng+j/g] += v
				hw += v * W[r*cols+j]
			}
			k := i / g
			b[k] += q[i] * hw
			b[ng+k] += hw
			for l := 0; l < ng; l++ {
				A[k*n+l] += q[i] * hq[i*ng+l]
				A[k*n+ng+l] += q[i] * h1[i*ng+l]
				A[(ng+k)*n+l] += hq[i*ng+l]
				A[(ng+k)*n+ng+l] += h1[i*ng+l]
			}
		}
		var tr float64
		for k := 0; k < n; k++ {
			tr += A[k*n+k]
		}
		lam := 1e-9 * tr / float64(n)
		for k := 0; k < ng; k++ {
			A[k*n+k] += lam
			b[k] += lam * float64(m.D[r*ng+k])
			A[(ng+k)*n+ng+k] += lam
			b[ng+k] += lam * float64(m.M[r*ng+k])
		}
		s, ok := solveSPD(A, b, n)
		if !ok {
			continue
		}
		for k := 0; k < ng; k++ {
			out.D[r*ng+k], out.M[r*ng+k] = half(s[k]), half(s[ng+k])
		}
	}
	return out
}
