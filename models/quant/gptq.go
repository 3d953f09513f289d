package quant

import (
	"errors"
	"fmt"
	"math"
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
// (Int4Codes: symmetric codes in [-7, 7], one scale per group of opt.Group
// values of a row, scale = max|group|/7), minimizing the output
// error on the calibration activations x ([n][cols], row-major: the inputs
// this layer sees, e.g. a few hundred tokens of text run through the float
// model).
//
// The algorithm (Frantar et al. 2022, Algorithm 1, with groups): H = 2XᵀX;
// columns no input ever touches are zeroed; H += damp·mean(diag H)·I; U =
// the upper Cholesky factor of H⁻¹. Then for each column i in order: when i
// starts a group, the group's scale comes from the current (error-updated)
// weights of the group; q = round(w[:, i]/scale) clamped to [-7, 7]; the
// error e = (w[:, i] − q·scale)/U[i][i] is subtracted from the later columns
// j of the same block of opt.Block columns as e·U[i][j], and from the
// columns after the block in one update at the block's end (the paper's lazy
// batches, which give the same result with less memory traffic). Columns go
// in their natural order (no act-order). Arithmetic is float64; the scales
// and codes follow RoundToNearestInt4's float32 rule, so dequantizing gives
// float32(q)·scale exactly as for round-to-nearest.
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
		hd := append([]float64(nil), h...)
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

	rb, ng := (cols+1)/2, (cols+g-1)/g
	m := newInt4Codes(rows, cols, g)
	errs := make([]float64, rows*bs) // [rows][block] scaled errors of the current block
	for i1 := 0; i1 < cols; i1 += bs {
		i2 := min(i1+bs, cols)
		for i := i1; i < i2; i++ {
			if i%g == 0 {
				for r := 0; r < rows; r++ {
					var amax float64
					for _, v := range W[r*cols+i : r*cols+min(i+g, cols)] {
						amax = max(amax, math.Abs(v))
					}
					m.Scale[r*ng+i/g] = int4Scale(float32(amax))
				}
			}
			d := U[i*cols+i]
			ui := U[i*cols+i+1 : i*cols+i2]
			for r := 0; r < rows; r++ {
				wr := W[r*cols : (r+1)*cols]
				s := m.Scale[r*ng+i/g]
				code := int4Code(float32(wr[i]), s)
				m.Packed[r*rb+i/2] |= code << (4 * (i & 1))
				e := (wr[i] - float64(float32(int(code)-8)*s)) / d
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
	return m, nil
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
