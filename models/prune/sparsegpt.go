package prune

import (
	"fmt"
	"math"
	"slices"

	"chat/models"
	"chat/models/kernels"
	"chat/models/kvcache"
	"chat/models/nn"
	"chat/models/weights"
)

// SparseGPT (Frantar & Alistarh 2023, "SparseGPT: Massive Language Models
// Can Be Accurately Pruned in One-Shot") prunes a matrix and then corrects
// the weights it keeps so that the layer's output on calibration inputs
// moves as little as possible: with H = Σ x·xᵀ over the inputs (and 1% of
// its mean diagonal added), column by column it zeroes the weights of
// lowest w²/[H⁻¹]ⱼⱼ² and spreads each zeroed weight's error over the
// columns not yet visited through the upper Cholesky factor of H⁻¹ (the
// optimal brain surgeon update), choosing the mask 128 columns at a time.
// Blocks are pruned in order, the Hessians of a block's matrices from the
// inputs the model gives once the blocks before it are pruned, as the
// paper prunes layer after layer.
// Its cost is O(rows·cols²) per matrix: course-sized models take seconds.

const (
	gptBlock = 128  // columns whose mask is chosen together
	gptDamp  = 0.01 // of the mean of H's diagonal, added to it
)

// SparseGPT prunes m to o (o.Method is ignored) with Hessians from windows
// of tokens.
func SparseGPT(m models.Model, o Options, tokens []int, windows int) (models.Model, Stats, error) {
	o.Method = "magnitude" // for check: SparseGPT takes the same shapes
	if err := o.check(); err != nil {
		return nil, Stats{}, err
	}
	v, ok := m.(variant)
	if !ok {
		return nil, Stats{}, fmt.Errorf("prune: %s cannot be pruned", m.Info().Name)
	}
	T := min(m.Info().ContextLength, len(tokens))
	if T < 1 {
		return nil, Stats{}, fmt.Errorf("prune: no calibration tokens")
	}
	windows = max(1, min(windows, len(tokens)/T))
	done := map[weights.Linear]weights.Linear{}
	var st Stats
	for _, group := range nn.Blocks(v.Arch()) {
		recs := map[weights.Linear]*hessian{}
		for _, l := range group {
			if o.M > 0 && l.Cols()%o.M != 0 {
				return nil, Stats{}, fmt.Errorf("prune: a %d:%d pattern needs rows of a multiple of %d weights; a matrix has %d", o.N, o.M, o.M, l.Cols())
			}
			recs[l] = &hessian{Linear: l, h: make([]float64, l.Cols()*l.Cols())}
		}
		arch, err := nn.ConvertArch(v.Arch(), func(l weights.Linear) (weights.Linear, error) {
			if r, ok := recs[l]; ok {
				return r, nil
			}
			if p, ok := done[l]; ok {
				return p, nil
			}
			return l, nil
		})
		if err != nil {
			return nil, Stats{}, err
		}
		s := kvcache.NewState(v.WithArch(arch))
		for w := range windows {
			s.Truncate(0)
			if _, err := s.Forward(tokens[w*T:(w+1)*T], 1); err != nil {
				return nil, Stats{}, fmt.Errorf("prune: calibration: %w", err)
			}
		}
		for _, target := range group {
			rows, cols := target.Rows(), target.Cols()
			w := weights.Dequantize(target)
			if err := sparseGPT(w, rows, cols, recs[target].h, o); err != nil {
				return nil, Stats{}, err
			}
			st.Matrices++
			st.Weights += int64(len(w))
			for _, x := range w {
				if x == 0 {
					st.Zeros++
				}
			}
			done[target] = weights.NewF32(w, rows, cols)
		}
	}
	arch, err := nn.ConvertArch(v.Arch(), func(l weights.Linear) (weights.Linear, error) {
		if p, ok := done[l]; ok {
			return p, nil
		}
		return l, nil
	})
	if err != nil {
		return nil, Stats{}, err
	}
	return v.WithArch(arch), st, nil
}

// hessian passes products through and sums x·xᵀ of the inputs.
type hessian struct {
	weights.Linear
	h []float64
	x []float32 // the inputs of a product, transposed: [cols][n]
	p []float32 // their x·xᵀ
}

func (r *hessian) Mul(out, x []float32, n int, s *weights.Scratch) {
	cols := r.Cols()
	if len(r.x) < cols*n {
		r.x = make([]float32, cols*n)
	}
	xt := r.x[:cols*n]
	for t := range n {
		for j, v := range x[t*cols : (t+1)*cols] {
			xt[j*n+t] = v
		}
	}
	// x·xᵀ with the matrix kernel: row j of xt against every row.
	if len(r.p) < cols*cols {
		r.p = make([]float32, cols*cols)
	}
	kernels.MatMul(r.p[:cols*cols], xt, xt, cols, n, cols)
	for i, v := range r.p[:cols*cols] {
		r.h[i] += float64(v)
	}
	r.Linear.Mul(out, x, n, s)
}

// sparseGPT prunes w ([rows][cols], in place) to o with the input Hessian h
// ([cols][cols], changed).
func sparseGPT(w []float32, rows, cols int, h []float64, o Options) error {
	// Dead inputs (never non-zero) carry nothing: zero their weights.
	var mean float64
	for j := range cols {
		if h[j*cols+j] == 0 {
			h[j*cols+j] = 1
			for r := range rows {
				w[r*cols+j] = 0
			}
		}
		mean += h[j*cols+j]
	}
	damp := gptDamp * mean / float64(cols)
	for j := range cols {
		h[j*cols+j] += damp
	}
	u, err := invCholUpper(h, cols)
	if err != nil {
		return err
	}
	W := make([]float64, len(w))
	for i, x := range w {
		W[i] = float64(x)
	}
	mask := make([]bool, len(w)) // true: pruned
	blk := gptBlock
	if o.M > 0 {
		blk -= blk % o.M // groups of M never straddle a block
	}
	errs := make([]float64, rows*blk)
	for b0 := 0; b0 < cols; b0 += blk {
		b1 := min(b0+blk, cols)
		if o.M == 0 {
			// Unstructured: the block's ⌊S·n⌋ weights of lowest w²/d².
			var idx []int
			var score []float64
			for r := range rows {
				for j := b0; j < b1; j++ {
					d := u[j*cols+j]
					idx = append(idx, r*cols+j)
					score = append(score, W[r*cols+j]*W[r*cols+j]/(d*d))
				}
			}
			k := int(math.Floor(o.Sparsity * float64(len(idx))))
			order := make([]int, len(idx))
			for i := range order {
				order[i] = i
			}
			slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(score[a], score[b]) })
			for _, i := range order[:k] {
				mask[idx[i]] = true
			}
		}
		for j := b0; j < b1; j++ {
			d := u[j*cols+j]
			if o.M > 0 && j%o.M == 0 {
				// N:M: of these M columns, in each row the M-N of lowest
				// w²/d² (with the weights as corrected so far).
				for r := range rows {
					g := make([]int, o.M)
					sc := make([]float64, o.M)
					for k := range o.M {
						g[k] = k
						dk := u[(j+k)*cols+j+k]
						x := W[r*cols+j+k]
						sc[k] = x * x / (dk * dk)
					}
					slices.SortStableFunc(g, func(a, b int) int { return cmpFloat(sc[a], sc[b]) })
					for _, k := range g[:o.M-o.N] {
						mask[r*cols+j+k] = true
					}
				}
			}
			for r := range rows {
				x := W[r*cols+j]
				q := x
				if mask[r*cols+j] {
					q = 0
				}
				e := (x - q) / d
				errs[r*blk+j-b0] = e
				W[r*cols+j] = q
				if e != 0 {
					row := W[r*cols : (r+1)*cols]
					for c := j + 1; c < b1; c++ {
						row[c] -= e * u[j*cols+c]
					}
				}
			}
		}
		// The block's errors, spread over the columns after it.
		for r := range rows {
			row := W[r*cols : (r+1)*cols]
			for j := b0; j < b1; j++ {
				e := errs[r*blk+j-b0]
				if e == 0 {
					continue
				}
				uj := u[j*cols : (j+1)*cols]
				for c := b1; c < cols; c++ {
					row[c] -= e * uj[c]
				}
			}
		}
	}
	for i, x := range W {
		w[i] = float32(x)
		if mask[i] {
			w[i] = 0
		}
	}
	return nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// invCholUpper is U, upper triangular with UᵀU = H⁻¹ (torch's
// cholesky(cholesky_inverse(cholesky(H)), upper=True)), for H symmetric
// positive definite [n][n].
func invCholUpper(h []float64, n int) ([]float64, error) {
	// H = L·Lᵀ.
	l := make([]float64, n*n)
	for i := range n {
		for j := 0; j <= i; j++ {
			s := h[i*n+j]
			for k := range j {
				s -= l[i*n+k] * l[j*n+k]
			}
			if i == j {
				if !(s > 0) {
					return nil, fmt.Errorf("prune: the calibration Hessian is not positive definite (too little calibration text?)")
				}
				l[i*n+i] = math.Sqrt(s)
			} else {
				l[i*n+j] = s / l[j*n+j]
			}
		}
	}
	// L⁻¹ (lower), then H⁻¹ = L⁻ᵀ·L⁻¹.
	li := make([]float64, n*n)
	for i := range n {
		li[i*n+i] = 1 / l[i*n+i]
		for j := 0; j < i; j++ {
			var s float64
			for k := j; k < i; k++ {
				s += l[i*n+k] * li[k*n+j]
			}
			li[i*n+j] = -s / l[i*n+i]
		}
	}
	inv := make([]float64, n*n)
	for i := range n {
		for j := 0; j <= i; j++ {
			var s float64
			for k := i; k < n; k++ { // (L⁻ᵀL⁻¹)ᵢⱼ = Σₖ L⁻¹ₖᵢ L⁻¹ₖⱼ, k ≥ max(i, j)
				s += li[k*n+i] * li[k*n+j]
			}
			inv[i*n+j], inv[j*n+i] = s, s
		}
	}
	// H⁻¹ = Uᵀ·U: U is the transpose of H⁻¹'s lower Cholesky factor.
	c := make([]float64, n*n)
	for i := range n {
		for j := 0; j <= i; j++ {
			s := inv[i*n+j]
			for k := range j {
				s -= c[i*n+k] * c[j*n+k]
			}
			if i == j {
				if !(s > 0) {
					return nil, fmt.Errorf("prune: the inverse Hessian is not positive definite")
				}
				c[i*n+i] = math.Sqrt(s)
			} else {
				c[i*n+j] = s / c[j*n+j]
			}
		}
	}
	u := make([]float64, n*n)
	for i := range n {
		for j := 0; j <= i; j++ {
			u[j*n+i] = c[i*n+j]
		}
	}
	return u, nil
}
