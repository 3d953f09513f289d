// Package prune zeroes weights (seed 003): unstructured pruning to a
// sparsity, and N:M structured pruning (2:4 keeps the 2 largest of every 4
// consecutive weights of a row, the pattern sparse tensor cores run), each
// by one of two scores:
//
//   - magnitude: |W_ij|, the smallest of each matrix go (unstructured), or
//     of each group of M (N:M);
//   - wanda (Sun et al. 2023, "A Simple and Effective Pruning Approach for
//     Large Language Models"): |W_ij|·‖X_j‖₂, the weight times the norm of
//     its input feature over calibration text, compared within each output
//     row (unstructured) or group of M (N:M). A weight that multiplies a
//     large activation matters more than its magnitude says; the calibration
//     activations come from one pass of the dense model.
//
// Every weight matrix is pruned but the embeddings and the output layer
// (those tagged "keep", which quantization leaves alone too). Pruned
// matrices are float32 with zeros: storage and speed do not change, quality
// does (the report says by how much).
package prune

import (
	"fmt"
	"math"
	"slices"

	"chat/models"
	"chat/models/kvcache"
	"chat/models/nn"
	"chat/models/weights"
)

// Options say what to prune.
type Options struct {
	Method   string  // "magnitude" or "wanda"
	Sparsity float64 // unstructured: the fraction of each group zeroed, in [0, 1)
	N, M     int     // structured: keep N of every M consecutive weights of a row (N:M); 0 for unstructured
}

// String names the options: "magnitude 50%", "wanda 2:4".
func (o Options) String() string {
	if o.M > 0 {
		return fmt.Sprintf("%s %d:%d", o.Method, o.N, o.M)
	}
	return fmt.Sprintf("%s %g%%", o.Method, 100*o.Sparsity)
}

func (o Options) check() error {
	switch {
	case o.Method != "magnitude" && o.Method != "wanda":
		return fmt.Errorf("prune: method %q (want magnitude or wanda)", o.Method)
	case o.M > 0 && (o.N < 0 || o.N >= o.M || o.M > 64):
		return fmt.Errorf("prune: %d:%d keeps N of every M weights; want 0 ≤ N < M ≤ 64", o.N, o.M)
	case o.M == 0 && !(o.Sparsity >= 0 && o.Sparsity < 1):
		return fmt.Errorf("prune: sparsity %v; want a fraction in [0, 1)", o.Sparsity)
	}
	return nil
}

// Stats count what a pruning zeroed.
type Stats struct {
	Matrices int   // matrices pruned
	Weights  int64 // their weights
	Zeros    int64 // their weights that are zero after pruning
}

// Sparsity is the fraction of the pruned matrices' weights that are zero.
func (s Stats) Sparsity() float64 {
	if s.Weights == 0 {
		return 0
	}
	return float64(s.Zeros) / float64(s.Weights)
}

// variant is a model whose weights can be swapped (course and GGUF models).
type variant interface {
	models.Model
	Arch() nn.Arch
	WithArch(nn.Arch) models.Model
}

// Calibration is the squared norm of every input feature of every matrix
// over some text, keyed by the matrix: what Wanda weighs each weight with.
type Calibration map[weights.Linear][]float64

// Calibrate runs m over windows of tokens (each at most the context, from
// position 0) and sums the squares of every input feature of every matrix
// the pruning would touch.
func Calibrate(m models.Model, tokens []int, windows int) (Calibration, error) {
	v, ok := m.(variant)
	if !ok {
		return nil, fmt.Errorf("prune: %s cannot be pruned", m.Info().Name)
	}
	cal := Calibration{}
	rec, err := nn.ConvertArch(v.Arch(), func(l weights.Linear) (weights.Linear, error) {
		if _, ok := cal[l]; !ok {
			cal[l] = make([]float64, l.Cols())
		}
		return &recorder{Linear: l, sq: cal[l]}, nil
	})
	if err != nil {
		return nil, err
	}
	T := min(m.Info().ContextLength, len(tokens))
	if T < 1 {
		return nil, fmt.Errorf("prune: no calibration tokens")
	}
	st := kvcache.NewState(v.WithArch(rec))
	windows = max(1, min(windows, len(tokens)/T))
	for w := range windows {
		st.Truncate(0)
		if _, err := st.Forward(tokens[w*T:(w+1)*T], 1); err != nil {
			return nil, fmt.Errorf("prune: calibration: %w", err)
		}
	}
	return cal, nil
}

// recorder passes products through and sums the squares of each input
// feature.
type recorder struct {
	weights.Linear
	sq []float64
}

func (r *recorder) Mul(out, x []float32, n int, s *weights.Scratch) {
	cols := r.Cols()
	for t := range n {
		for j, v := range x[t*cols : (t+1)*cols] {
			r.sq[j] += float64(v) * float64(v)
		}
	}
	r.Linear.Mul(out, x, n, s)
}

// Prune returns m with its matrices pruned (float32, zeros where pruned)
// and what it zeroed. Wanda needs cal (from Calibrate on the same m).
func Prune(m models.Model, o Options, cal Calibration) (models.Model, Stats, error) {
	if err := o.check(); err != nil {
		return nil, Stats{}, err
	}
	v, ok := m.(variant)
	if !ok {
		return nil, Stats{}, fmt.Errorf("prune: %s cannot be pruned", m.Info().Name)
	}
	if o.Method == "wanda" && cal == nil {
		return nil, Stats{}, fmt.Errorf("prune: wanda needs calibration activations")
	}
	var st Stats
	done := map[weights.Linear]weights.Linear{} // a matrix in two fields is pruned once
	arch, err := nn.ConvertArch(v.Arch(), func(l weights.Linear) (weights.Linear, error) {
		if p, ok := done[l]; ok {
			return p, nil
		}
		rows, cols := l.Rows(), l.Cols()
		if o.M > 0 && cols%o.M != 0 {
			return nil, fmt.Errorf("prune: a %d:%d pattern needs rows of a multiple of %d weights; a matrix has %d", o.N, o.M, o.M, cols)
		}
		w := weights.Dequantize(l)
		score := make([]float64, len(w))
		var norm []float64
		if o.Method == "wanda" {
			sq, ok := cal[l]
			if !ok {
				return nil, fmt.Errorf("prune: a matrix has no calibration activations (calibrate the same model)")
			}
			norm = make([]float64, cols)
			for j, s := range sq {
				norm[j] = math.Sqrt(s)
			}
		}
		for i, x := range w {
			score[i] = math.Abs(float64(x))
			if norm != nil {
				score[i] *= norm[i%cols]
			}
		}
		switch {
		case o.M > 0:
			for g := 0; g < len(w); g += o.M {
				zeroLowest(w[g:g+o.M], score[g:g+o.M], o.M-o.N)
			}
		case o.Method == "wanda": // per output row
			k := int(math.Floor(o.Sparsity * float64(cols)))
			for r := range rows {
				zeroLowest(w[r*cols:(r+1)*cols], score[r*cols:(r+1)*cols], k)
			}
		default: // magnitude: per matrix
			zeroLowest(w, score, int(math.Floor(o.Sparsity*float64(len(w)))))
		}
		st.Matrices++
		st.Weights += int64(len(w))
		for _, x := range w {
			if x == 0 {
				st.Zeros++
			}
		}
		p := weights.NewF32(w, rows, cols)
		done[l] = p
		return p, nil
	})
	if err != nil {
		return nil, Stats{}, err
	}
	return v.WithArch(arch), st, nil
}

// zeroLowest zeroes the k weights of w with the lowest score (the first
// among equal scores first).
func zeroLowest(w []float32, score []float64, k int) {
	if k <= 0 {
		return
	}
	idx := make([]int, len(w))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case score[a] < score[b]:
			return -1
		case score[a] > score[b]:
			return 1
		}
		return 0
	})
	for _, i := range idx[:min(k, len(idx))] {
		w[i] = 0
	}
}
