package weights

import (
	"fmt"

	"chat/models/kernels"
)

// LoRA is a matrix with low-rank adapter updates applied without merging
// them (LoRA, seed 003): W·x + Σ scale·B·(A·x), A [rank][Cols] and B
// [Rows][rank] float32. The base keeps its format and storage, so adapters
// can be switched on and off by making another LoRA of the same base, and
// the update costs 2·rank·(Rows+Cols) multiply-adds per token instead of a
// copy of W. Row (and so Dequantize, Convert and re-encoding into another
// format) gives the merged row, W + Σ scale·B·A.
type LoRA struct {
	base    Linear
	updates []Update
}

// Update is one adapter's change to a matrix.
type Update struct {
	A, B  *F32
	Scale float32 // the adapter's alpha/rank times its user scale
}

// NewLoRA wraps base with updates (none: base itself).
func NewLoRA(base Linear, updates ...Update) (Linear, error) {
	if len(updates) == 0 {
		return base, nil
	}
	if l, ok := base.(*LoRA); ok { // updates on updates: one list
		base, updates = l.base, append(append([]Update(nil), l.updates...), updates...)
	}
	for _, u := range updates {
		if u.A.Cols() != base.Cols() || u.B.Rows() != base.Rows() || u.A.Rows() != u.B.Cols() {
			return nil, fmt.Errorf("weights: LoRA A [%d][%d], B [%d][%d] do not fit a [%d][%d] matrix",
				u.A.Rows(), u.A.Cols(), u.B.Rows(), u.B.Cols(), base.Rows(), base.Cols())
		}
	}
	return &LoRA{base: base, updates: updates}, nil
}

func (l *LoRA) Rows() int      { return l.base.Rows() }
func (l *LoRA) Cols() int      { return l.base.Cols() }
func (l *LoRA) Format() string { return l.base.Format() }

func (l *LoRA) Bytes() int64 {
	n := l.base.Bytes()
	for _, u := range l.updates {
		n += u.A.Bytes() + u.B.Bytes()
	}
	return n
}

// Mul is the base's product plus each update, B·(A·x) scaled, added to it
// in adapter order.
func (l *LoRA) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(l, out, x, n)
	l.base.Mul(out, x, n, s)
	rows := l.base.Rows()
	for _, u := range l.updates {
		r := u.A.Rows()
		if len(s.lo) < n*(r+rows) {
			s.lo = make([]float32, n*(r+rows))
		}
		ax, bax := s.lo[:n*r], s.lo[n*r:n*(r+rows)]
		u.A.Mul(ax, x, n, s)
		u.B.Mul(bax, ax, n, s)
		kernels.Axpy(u.Scale, bax, out[:n*rows])
	}
}

// Row is the merged row r: W[r] + Σ scale·B[r]·A.
func (l *LoRA) Row(dst []float32, r int) {
	l.base.Row(dst, r)
	dst = dst[:l.base.Cols()]
	for _, u := range l.updates {
		rank, cols := u.A.Rows(), u.A.Cols()
		b := u.B.w[r*rank : (r+1)*rank]
		for k, bk := range b {
			if c := u.Scale * bk; c != 0 {
				kernels.Axpy(c, u.A.w[k*cols:(k+1)*cols], dst)
			}
		}
	}
}

// Slice is rows [r0, r1) of the base with the same rows of each B.
func (l *LoRA) Slice(r0, r1 int) Linear {
	checkSlice(l, r0, r1)
	ups := make([]Update, len(l.updates))
	for i, u := range l.updates {
		ups[i] = Update{A: u.A, B: u.B.Slice(r0, r1).(*F32), Scale: u.Scale}
	}
	return &LoRA{base: l.base.Slice(r0, r1), updates: ups}
}
