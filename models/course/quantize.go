package course

import (
	"fmt"

	"chat/models"
	"chat/models/quant"
)

// linear is one weight matrix [rows][cols] of the blocks: float32 as loaded,
// or quantized (then w is nil, so the float copy can be freed).
type linear struct {
	rows, cols int
	w          []float32
	q          quant.Matrix
}

// newLinear wraps a loaded row-major matrix of cols columns (nil after a load
// error gives an empty linear).
func newLinear(w []float32, cols int) linear {
	if w == nil {
		return linear{}
	}
	return linear{rows: len(w) / cols, cols: cols, w: w}
}

// bytes is the storage one full product reads.
func (l *linear) bytes() int64 {
	if l.q != nil {
		return l.q.Bytes()
	}
	return 4 * int64(len(l.w))
}

// mul computes out[i*rows+r] = w[r]·x[i*cols:] for n rows of x, with the
// float kernels or, for a quantized matrix, through quant.MatMul using the
// state's dequantization scratch.
func (s *State) mul(out []float32, l *linear, x []float32, n int) {
	if l.q == nil {
		matmul(out, l.w, x, n, l.rows, l.cols)
		return
	}
	quant.MatMul(out, l.q, x, n, s.deq)
}

// Quantize returns a model whose block linears are stored in format ("int8",
// "int8-a8", "int4-g32", "int4-g64", "int4-g128", "fp8"; "f32" returns m
// itself). "int8" computes the course's int8 numbers; "int8-a8" has the same
// weights but also quantizes each product's input (faster int8 kernels,
// slightly different numbers). It
// shares m's embeddings, position table, norms, biases and lm_head, which
// stay float32 as in the course's quantize_int8(skip=("lm_head",)), and holds
// no reference to m's float linears: drop m to free them. The quantized
// linears are every nn.Linear the course quantizes (§7.4): classic
// key/query/value, attn.proj, mlp.hidden, mlp.proj; modern q/k/v/o_proj, the
// attention gate, mlp gate/up/down, the MoE router, experts and shared
// expert, MLA q_proj, kv_down, k_up, v_up. The fused matrices are quantized
// row by row, which is the same as quantizing their parts.
func (m *Model) Quantize(format string) (*Model, error) {
	if err := quant.CheckFormat(format); err != nil {
		return nil, fmt.Errorf("course: %w", err)
	}
	if m.info.Quant != "f32" {
		return nil, fmt.Errorf("course: %s is already %s; quantize the float32 model", m.info.Name, m.info.Quant)
	}
	if format == "f32" {
		return m, nil
	}
	q := *m
	q.blocks = make([]block, len(m.blocks))
	q.scratch = quant.ScratchSize{}
	var err error
	ql := func(l linear) linear {
		if err != nil || l.w == nil {
			return l
		}
		var qm quant.Matrix
		if qm, err = quant.New(format, l.w, l.rows, l.cols); err != nil {
			return l
		}
		q.scratch.Add(qm)
		return linear{rows: l.rows, cols: l.cols, q: qm}
	}
	qs := func(w swiglu) swiglu {
		return swiglu{f: w.f, gateUp: ql(w.gateUp), down: ql(w.down)}
	}
	for i := range m.blocks {
		b := m.blocks[i] // a copy: m's blocks stay float
		b.wIn, b.wO, b.w1, b.w2, b.kvUp, b.router = ql(b.wIn), ql(b.wO), ql(b.w1), ql(b.w2), ql(b.kvUp), ql(b.router)
		b.mlp, b.shared = qs(b.mlp), qs(b.shared)
		b.experts = make([]swiglu, len(m.blocks[i].experts))
		for e, x := range m.blocks[i].experts {
			b.experts[e] = qs(x)
		}
		q.blocks[i] = b
	}
	if err != nil {
		return nil, fmt.Errorf("course: %s: %w", m.info.Name, err)
	}
	q.info.Quant = format
	q.info.WeightBytes = q.weightBytes()
	return &q, nil
}

// QuantizeModel is Quantize behind the models.Model interface, for callers
// (the quant report, a session toggle) that hold a models.Model.
func (m *Model) QuantizeModel(format string) (models.Model, error) {
	q, err := m.Quantize(format)
	if err != nil {
		return nil, err
	}
	return q, nil
}
