package quant

import (
	"fmt"
	"math"

	"chat/models/kernels"
)

// AWQ (Lin, Tang, Tang, Yang, Dang, Gan, Han, "AWQ: Activation-aware Weight
// Quantization for LLM Compression and Acceleration", 2023) protects the
// weights that meet large activations: it scales input channel c of the
// weights up by s_c before quantization and the activation
// down by s_c, so W·x = (W·diag(s))·(x/s) and channels with large |x| lose
// less to rounding. s = mean|x_c|^α, normalized so max(s)·min(s) = 1, with α
// the grid value that minimizes the layer's output error on calibration
// inputs.

// AWQOptions tunes AWQ; zero values take the defaults.
type AWQOptions struct {
	Group int // int4 group size: 32, 64 or 128 (required)
	Grid  int // α ∈ {0, 1/Grid, ..., (Grid-1)/Grid} (default 20, the paper's)
}

// AWQResult is a layer quantized by AWQ: it computes Q·(x/InScale), where Q
// is the int4-group matrix of W·diag(InScale).
type AWQResult struct {
	Q       *Int4Codes
	InScale []float32 // [cols], s
	Alpha   float64   // the chosen exponent (0: no channel scaling was best)
}

// AWQ searches per-input-channel scales for the row-major [rows][cols]
// weight w on calibration activations x ([n][cols]) and quantizes
// W·diag(s) to int4 groups of opt.Group with AWQ's clip search
// (clippedInt4: each group's scale from a grid of clipping ratios, codes in
// [-8, 7]). The error it minimizes is Σ over tokens and rows of
// (x·wᵀ − x·ŵᵀ)², with ŵ = dequantized(Q(W·diag(s)))·diag(1/s); plain
// round-to-nearest (RoundToNearestInt4, s = 1) is one of the candidates, so
// the result is never worse than round-to-nearest on x.
//
// Applying s: the layer's input must be divided by s channel-wise. Where the
// input comes from an RMSNorm or LayerNorm, divide the norm's weight (and
// bias) by s once at load: the product then costs nothing extra. Matrices
// that share an input (attention's q, k, v; the MLP's gate and up) must
// share s: stack their rows into one w for the search. For an input with no
// foldable producer (attention's output projection, the MLP's down
// projection after the gate), either fold 1/s into the rows of the previous
// linear map where the function between them is linear (v → o), or multiply
// the activation by 1/s before the product (cols multiplies per token).
func AWQ(w []float32, rows, cols int, x []float32, n int, opt AWQOptions) (*AWQResult, error) {
	g := opt.Group
	if g != 32 && g != 64 && g != 128 {
		return nil, fmt.Errorf("quant: awq: group size %d, want 32, 64 or 128", g)
	}
	if err := checkCalib("awq", w, rows, cols, x, n); err != nil {
		return nil, err
	}
	grid := opt.Grid
	if grid <= 0 {
		grid = 20
	}
	mag := make([]float64, cols)
	for t := 0; t < n; t++ {
		for c, v := range x[t*cols : (t+1)*cols] {
			mag[c] += math.Abs(float64(v))
		}
	}
	for c := range mag {
		mag[c] /= float64(n)
	}
	// The error of a weight change D ([rows][cols]) is Σ_r D_r·XᵀX·D_rᵀ,
	// computed as ‖X·Dᵀ‖² directly when that is cheaper. The float32
	// products only rank the grid points.
	var h []float32
	if n > cols {
		h64 := hessian(x, n, cols) // 2XᵀX
		h = make([]float32, len(h64))
		for i, v := range h64 {
			h[i] = float32(v / 2)
		}
	}
	msq := make([]float64, cols) // mean x_c², the diagonal of XᵀX/n
	for t := 0; t < n; t++ {
		for c, v := range x[t*cols : (t+1)*cols] {
			msq[c] += float64(v) * float64(v) / float64(n)
		}
	}
	ws := make([]float32, rows*cols)
	dw := make([]float32, rows*cols)
	tmp := make([]float32, rows*max(cols, n))
	s := make([]float32, cols)
	dc := make([]float64, cols)
	best := &AWQResult{Alpha: -1}
	bestErr := math.Inf(1)
	try := func(q *Int4Codes, alpha float64) {
		d := q.Dequantize()
		for i := range dw {
			dw[i] = float32(float64(w[i]) - float64(d[i])/float64(s[i%cols]))
		}
		if e := outputError(dw, rows, cols, x, n, h, tmp); e < bestErr {
			bestErr = e
			best = &AWQResult{Q: q, InScale: append([]float32(nil), s...), Alpha: alpha}
		}
	}
	for k := 0; k < grid; k++ {
		alpha := float64(k) / float64(grid)
		awqScales(s, mag, alpha)
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				ws[r*cols+c] = w[r*cols+c] * s[c]
			}
		}
		if k == 0 { // plain round-to-nearest stays a candidate
			q, err := RoundToNearestInt4(ws, rows, cols, g)
			if err != nil {
				return nil, fmt.Errorf("quant: awq: %w", err)
			}
			try(q, alpha)
		}
		for c := range dc {
			dc[c] = msq[c] / (float64(s[c]) * float64(s[c])) // the scaled input's mean square
		}
		try(clippedInt4(ws, rows, cols, g, dc), alpha)
	}
	return best, nil
}

// clippedInt4 quantizes the [rows][cols] w to int4 groups of g with codes
// in [-8, 7], each group's scale chosen on a grid of clipping ratios (from
// max|group|/7 down to half of it: AWQ's clip search) by the rounding
// error weighted by d, each column's input mean square.
func clippedInt4(w []float32, rows, cols, g int, d []float64) *Int4Codes {
	m := newInt4Codes(rows, cols, g)
	rb, ng := (cols+1)/2, (cols+g-1)/g
	for r := 0; r < rows; r++ {
		for j := 0; j < ng; j++ {
			c0 := j * g
			grp := w[r*cols+c0 : r*cols+min(c0+g, cols)]
			amax := float64(maxAbs(grp))
			best, bestErr := int4Scale(float32(amax)), math.Inf(1)
			for k := 0; k <= clipSteps && amax > 0; k++ {
				sc := clipScale(amax, k)
				var e float64
				for i, v := range grp {
					diff := float64(v) - float64(float32(codeRange(v, sc, 8))*sc)
					e += d[c0+i] * diff * diff
				}
				if e < bestErr {
					best, bestErr = sc, e
				}
			}
			m.Scale[r*ng+j] = best
			for i, v := range grp {
				c := c0 + i
				m.Packed[r*rb+c/2] |= byte(codeRange(v, best, 8)+8) << (4 * (c & 1))
			}
		}
	}
	return m
}

// awqScales sets s[c] = max(mag[c]^alpha, 1e-4), divided by √(max·min) (as
// the AWQ reference does, so the scales straddle 1).
func awqScales(s []float32, mag []float64, alpha float64) {
	lo, hi := math.Inf(1), 0.0
	v := make([]float64, len(mag))
	for c, m := range mag {
		v[c] = max(math.Pow(m, alpha), 1e-4)
		lo, hi = min(lo, v[c]), max(hi, v[c])
	}
	norm := math.Sqrt(lo * hi)
	for c := range s {
		s[c] = float32(v[c] / norm)
	}
}

// outputError is Σ_t Σ_r (x_t·d_r)² for the [rows][cols] change d: from
// h = XᵀX when given (Σ_r d_r·h·d_rᵀ), else from x directly. tmp holds
// rows·max(cols, n) floats.
func outputError(d []float32, rows, cols int, x []float32, n int, h, tmp []float32) float64 {
	var e float64
	if h != nil {
		dh := tmp[:rows*cols]
		kernels.MatMul(dh, h, d, cols, cols, rows) // row r: h·d_r (h is symmetric)
		for r := 0; r < rows; r++ {
			e += float64(kernels.Dot(d[r*cols:(r+1)*cols], dh[r*cols:(r+1)*cols]))
		}
		return e
	}
	xd := tmp[:rows*n]
	kernels.MatMul(xd, d, x, rows, cols, n) // token t: d·x_t
	for _, v := range xd {
		e += float64(v) * float64(v)
	}
	return e
}
