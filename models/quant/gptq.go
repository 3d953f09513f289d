package quant

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// GPTQ (Frantar, Ashkboos, Hoefler, Alistarh, "GPTQ: Accurate Post-Training
// Quantization for Generative Pre-trained Transformers", 2022) quantizes a
// linear layer's weights one input column at a time and spreads each
// column's rounding error over the columns not yet quantized, weighted by the
// inverse Hessian of the layer's squared output error on calibration inputs.
// For one output row w and inputs X ([n][cols]) the error is
// ‖Xwᵀ − Xŵᵀ‖² = (w−ŵ)·XᵀX·(w−ŵ)ᵀ, so H = 2XᵀX is shared by all rows.

// GPTQOptions tunes GPTQ; zero values take the defaults.
type GPTQOptions struct {
	Group int     // int4 group size: 32, 64 or 128 (required)
	Damp  float64 // dampening added to H's diagonal, as a fraction of its mean (default 0.01, the paper's)
	Block int     // columns per lazy batch update (default 128, the paper's)
}

// maxCalibCols bounds the Hessian GPTQ and AWQ build: cols² float64s (a
// [16384][16384] Hessian is 2 GiB).
const maxCalibCols = 16384

// GPTQ quantizes the row-major [rows][cols] weight matrix w to int4 groups
// (Int4Codes: one float32 scale per group of opt.Group values of a row,
// weight = float32(code−8)·scale), minimizing the output error on the
// calibration activations x ([n][cols], row-major: the inputs this layer
// sees, e.g. a few thousand tokens of text run through the model).
//
// The algorithm (Frantar et al. 2022, Algorithm 1, with groups): H = 2XᵀX;
// columns no input ever touches are zeroed; H += damp·mean(diag H)·I; U =
// the upper Cholesky factor of H⁻¹. Then for each column i in order: when i
// starts a group, the group's scale is chosen from the current (error-
// updated) weights of the group; q = round(w[:, i]/scale) clamped; the
// error e = (w[:, i] − q·scale)/U[i][i] is subtracted from the later columns
// j of the same block of opt.Block columns as e·U[i][j], and from the
// columns after the block in one update at the block's end (the paper's lazy
// batches, which give the same result with less memory traffic).
//
// Beyond the paper, within the same int4 format:
//   - codes use all 16 levels, [-8, 7] (the format's level table has -8;
//     round-to-nearest leaves it unused);
//   - a group's scale is searched over clipping ratios of max|group|/7 (the
//     clip search of AWQ's and GPTQ's reference code), scored by the error
//     the group's own column loop adds to the objective, not by the plain
//     rounding error;
//   - after the loop the scales of each row are refit by least squares to
//     the codes, minimizing (w−ŵ)·H·(w−ŵ)ᵀ exactly (kept only where that
//     lowers the matrix's error).
//
// Arithmetic is float64; a weight dequantizes to float32(q)·scale exactly
// as for round-to-nearest, so the int4 kernels run the result unchanged.
func GPTQ(w []float32, rows, cols int, x []float32, n int, opt GPTQOptions) (*Int4Codes, error) {
	g := opt.Group
	if g != 32 && g != 64 && g != 128 {
		return nil, fmt.Errorf("quant: gptq: group size %d, want 32, 64 or 128", g)
	}
	if err := checkCalib("gptq", w, rows, cols, x, n); err != nil {
		return nil, err
	}
	damp, bs := opt.Damp, opt.Block
	if damp <= 0 {
		damp = 0.01
	}
	if bs <= 0 {
		bs = 128
	}
	bs = (bs + g - 1) / g * g // whole groups per block: a group's scale search sees its updated weights
	h := hessian(x, n, cols)
	W := make([]float64, rows*cols)
	for i, v := range w {
		W[i] = float64(v)
	}
	var mean float64
	for i := 0; i < cols; i++ {
		if h[i*cols+i] == 0 { // a dead input: its weights never matter
			h[i*cols+i] = 1
			for r := 0; r < rows; r++ {
				W[r*cols+i] = 0
			}
		}
		mean += h[i*cols+i]
	}
	mean /= float64(cols)
	var U []float64
	for try := 0; ; try++ {
		hd := slices.Clone(h)
		for i := 0; i < cols; i++ {
			hd[i*cols+i] += damp * mean
		}
		var ok bool
		if U, ok = invCholUpper(hd, cols); ok {
			break
		}
		if try == 5 {
			return nil, errors.New("quant: gptq: the calibration Hessian is not positive definite even with dampening")
		}
		damp *= 10
	}
	m := gptqPass(slices.Clone(W), U, rows, cols, g, bs)
	// The refit minimizes the dampened objective, the one the loop works on.
	for i := 0; i < cols; i++ {
		h[i*cols+i] += damp * mean
	}
	refit := &Int4Codes{Rows: rows, Cols: cols, Group: g, Packed: m.Packed, Scale: refitScales(m, W, h)}
	if hError(refit, W, h) < hError(m, W, h) {
		m = refit
	}
	return m, nil
}

// gptqPass is GPTQ's column loop (the paper's Algorithm 1 with lazy batch
// updates) over the columns of W ([rows][cols], modified), U being the
// upper Cholesky factor of H⁻¹, each group's scale picked by groupScale
// and codes in [-8, 7].
func gptqPass(W, U []float64, rows, cols, g, bs int) *Int4Codes {
	rb, ng := (cols+1)/2, (cols+g-1)/g
	m := newInt4Codes(rows, cols, g)
	errs := make([]float64, rows*bs) // [rows][block] scaled errors of the current block
	for i1 := 0; i1 < cols; i1 += bs {
		i2 := min(i1+bs, cols)
		for i := i1; i < i2; i++ {
			if i%g == 0 {
				for r := 0; r < rows; r++ {
					m.Scale[r*ng+i/g] = groupScale(W[r*cols+i:r*cols+min(i+g, cols)], U, i, cols)
				}
			}
			d := U[i*cols+i]
			ui := U[i*cols+i+1 : i*cols+i2]
			for r := 0; r < rows; r++ {
				wr := W[r*cols : (r+1)*cols]
				s := m.Scale[r*ng+i/g]
				q := codeRange(float32(wr[i]), s, 8)
				m.Packed[r*rb+i/2] |= byte(q+8) << (4 * (i & 1))
				e := (wr[i] - float64(float32(q)*s)) / d
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

// groupScale is the scale for the group of error-updated weights v (one
// row's columns i, i+1, ...) that adds the least to GPTQ's objective: for each clipping ratio on
// a grid from max|v|/7 down to half of it, the group's own column loop runs
// (codes in [-8, 7], each column's error spread over the group's later
// columns) and sums ((w−q·s)/U_jj)², each column's share of the objective.
func groupScale(v, U []float64, i, cols int) float32 {
	var amax float64
	for _, x := range v {
		amax = max(amax, math.Abs(x))
	}
	best, bestErr := int4Scale(float32(amax)), math.Inf(1)
	if amax == 0 {
		return best
	}
	tmp := make([]float64, len(v))
	for k := 0; k <= clipSteps; k++ {
		s := clipScale(amax, k)
		copy(tmp, v)
		var e float64
		for j, x := range tmp {
			q := codeRange(float32(x), s, 8)
			d := (x - float64(float32(q)*s)) / U[(i+j)*cols+i+j]
			if e += d * d; e >= bestErr {
				break
			}
			for jj, u := range U[(i+j)*cols+i+j+1 : (i+j)*cols+i+len(v)] {
				tmp[j+1+jj] -= d * u
			}
		}
		if e < bestErr {
			best, bestErr = s, e
		}
	}
	return best
}

// hError is Σ_r (w_r−ŵ_r)·h·(w_r−ŵ_r)ᵀ, the output error of m against W.
func hError(m *Int4Codes, W, h []float64) float64 {
	cols := m.Cols
	d := m.Dequantize()
	diff := make([]float64, cols)
	var e float64
	for r := 0; r < m.Rows; r++ {
		for c := range diff {
			diff[c] = W[r*cols+c] - float64(d[r*cols+c])
		}
		for i, di := range diff {
			if di == 0 {
				continue
			}
			var s float64
			for j, dj := range diff {
				s += h[i*cols+j] * dj
			}
			e += di * s
		}
	}
	return e
}

// refitScales returns, for m's codes, the group scales of each row that
// minimize that row's output error (w−ŵ)·h·(w−ŵ)ᵀ: a least-squares problem
// in the row's ⌈cols/g⌉ scales. A row whose solution is not all positive
// keeps its scales.
func refitScales(m *Int4Codes, W, h []float64) []float32 {
	rows, cols, g := m.Rows, m.Cols, m.Group
	rb, ng := (cols+1)/2, (cols+g-1)/g
	out := slices.Clone(m.Scale)
	q := make([]float64, cols)
	hq := make([]float64, cols*ng) // [i][k]: Σ_{j in group k} h[i][j]·q[j]
	A := make([]float64, ng*ng)
	b := make([]float64, ng)
	for r := 0; r < rows; r++ {
		for c := range q {
			q[c] = float64(int(m.Packed[r*rb+c/2]>>(4*(c&1))&15) - 8)
		}
		clear(hq)
		clear(A)
		clear(b)
		for i := 0; i < cols; i++ {
			var hw float64
			for j, v := range h[i*cols : (i+1)*cols] {
				hq[i*ng+j/g] += v * q[j]
				hw += v * W[r*cols+j]
			}
			b[i/g] += q[i] * hw
			for k := 0; k < ng; k++ {
				A[(i/g)*ng+k] += q[i] * hq[i*ng+k]
			}
		}
		for k := 0; k < ng; k++ {
			if A[k*ng+k] == 0 { // an all-zero group: its scale does not matter
				A[k*ng+k], b[k] = 1, float64(m.Scale[r*ng+k])
			}
		}
		s, ok := solveSPD(A, b, ng)
		if !ok || slices.ContainsFunc(s, func(v float64) bool { return !(v > 0) }) {
			continue
		}
		for k, v := range s {
			out[r*ng+k] = float32(v)
		}
	}
	return out
}

// solveSPD solves a·x = b for the symmetric positive definite [n][n] a
// (overwritten), or reports false.
func solveSPD(a, b []float64, n int) ([]float64, bool) {
	if !cholesky(a, n) {
		return nil, false
	}
	x := slices.Clone(b)
	for i := 0; i < n; i++ { // L·y = b
		for k := 0; k < i; k++ {
			x[i] -= a[i*n+k] * x[k]
		}
		x[i] /= a[i*n+i]
	}
	for i := n - 1; i >= 0; i-- { // Lᵀ·x = y
		for k := i + 1; k < n; k++ {
			x[i] -= a[k*n+i] * x[k]
		}
		x[i] /= a[i*n+i]
	}
	return x, true
}

// checkCalib checks a weight matrix and its calibration activations.
func checkCalib(what string, w []float32, rows, cols int, x []float32, n int) error {
	if err := checkMatrix(what, w, rows, cols); err != nil {
		return err
	}
	if cols > maxCalibCols {
		return fmt.Errorf("quant: %s: %d columns, at most %d (the calibration Hessian is cols² values)", what, cols, maxCalibCols)
	}
	if n <= 0 || len(x) != n*cols {
		return fmt.Errorf("quant: %s: %d calibration values for %d tokens of %d", what, len(x), n, cols)
	}
	for i, v := range x {
		if !isFinite(v) {
			return fmt.Errorf("quant: %s: calibration token %d holds a non-finite value", what, i/cols)
		}
	}
	return nil
}

// hessian returns 2XᵀX ([cols][cols], float64) of the [n][cols] x.
func hessian(x []float32, n, cols int) []float64 {
	h := make([]float64, cols*cols)
	row := make([]float64, cols)
	for t := 0; t < n; t++ {
		for c, v := range x[t*cols : (t+1)*cols] {
			row[c] = float64(v)
		}
		for i, xi := range row {
			if xi == 0 {
				continue
			}
			hi := h[i*cols : i*cols+i+1]
			for j := range hi {
				hi[j] += xi * row[j]
			}
		}
	}
	for i := 0; i < cols; i++ {
		for j := 0; j <= i; j++ {
			v := 2 * h[i*cols+j]
			h[i*cols+j], h[j*cols+i] = v, v
		}
	}
	return h
}

// invCholUpper returns U, upper triangular with U'U = a⁻¹ (row-major, the
// zeros below the diagonal included), or false if the symmetric a is not
// positive definite. a is overwritten.
func invCholUpper(a []float64, n int) ([]float64, bool) {
	// a = LLᵀ (lower, in place), then L⁻¹ (in place), then a⁻¹ = L⁻ᵀL⁻¹.
	if !cholesky(a, n) {
		return nil, false
	}
	for j := 0; j < n; j++ {
		a[j*n+j] = 1 / a[j*n+j]
		for i := j + 1; i < n; i++ {
			var s float64
			for k := j; k < i; k++ {
				s += a[i*n+k] * a[k*n+j]
			}
			a[i*n+j] = -s / a[i*n+i]
		}
	}
	inv := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			var s float64
			for k := i; k < n; k++ { // (L⁻ᵀL⁻¹)[i][j] = Σ_k L⁻¹[k][i]·L⁻¹[k][j]
				s += a[k*n+i] * a[k*n+j]
			}
			inv[i*n+j], inv[j*n+i] = s, s
		}
	}
	// The upper factor of inv is the transpose of its lower Cholesky factor.
	if !cholesky(inv, n) {
		return nil, false
	}
	u := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			u[j*n+i] = inv[i*n+j]
		}
	}
	return u, true
}

// cholesky factors the symmetric positive definite a = LLᵀ in place (L in
// the lower triangle; the upper triangle is left as it was) and reports
// whether a was positive definite.
func cholesky(a []float64, n int) bool {
	for j := 0; j < n; j++ {
		d := a[j*n+j]
		for k := 0; k < j; k++ {
			d -= a[j*n+k] * a[j*n+k]
		}
		if !(d > 0) {
			return false
		}
		d = math.Sqrt(d)
		a[j*n+j] = d
		for i := j + 1; i < n; i++ {
			s := a[i*n+j]
			for k := 0; k < j; k++ {
				s -= a[i*n+k] * a[j*n+k]
			}
			a[i*n+j] = s / d
		}
	}
	return true
}
