package nn

import (
	"errors"
	"fmt"

	"chat/models"
	"chat/models/kernels"
	"chat/models/weights"
)

// Model is an architecture with what the app needs around it: the
// description, the tokenizer and the cache layout. It implements
// models.Model and models.Quantizer.
type Model struct {
	arch   Arch
	info   models.Info
	tok    models.Tokenizer
	layout models.KVLayout
}

// NewModel wraps arch. info.WeightBytes is computed from arch's bound
// weights (see WeightBytes) unless arch has a WeightBytes method of its own,
// and info.Arith from their formats (ArithOf).
func NewModel(arch Arch, info models.Info, tok models.Tokenizer, layout models.KVLayout) *Model {
	info.WeightBytes, info.Arith = archBytes(arch), ArithOf(arch)
	return &Model{arch: arch, info: info, tok: tok, layout: layout}
}

func archBytes(a Arch) int64 {
	if w, ok := a.(interface{ WeightBytes() int64 }); ok {
		return w.WeightBytes()
	}
	return WeightBytes(a)
}

func (m *Model) Info() models.Info           { return m.info }
func (m *Model) Tokenizer() models.Tokenizer { return m.tok }
func (m *Model) KVLayout() models.KVLayout   { return m.layout }

// NewRunner's products fetch the weights as a model of this size is best
// read: from the caches, or streamed past them (kernels.ReuseFor).
func (m *Model) NewRunner() models.Runner {
	r := NewRunner(m.arch, m.info.VocabSize)
	r.p.W.Reuse = kernels.ReuseFor(m.info.WeightBytes)
	return r
}

// With returns a copy of m with another description and tokenizer.
func (m *Model) With(info models.Info, tok models.Tokenizer) *Model {
	c := *m
	c.info, c.tok = info, tok
	c.info.WeightBytes, c.info.Arith = m.info.WeightBytes, m.info.Arith
	return &c
}

// ArithOf is the arithmetic that most of arch's parameters in the matrices
// every token multiplies (Linears: not the embeddings, nor a kept output
// layer) are multiplied by, as their formats say (weights.ArithOf).
func ArithOf(arch Arch) kernels.Arith {
	var n [2]int64
	for _, l := range Linears(arch) {
		n[weights.ArithOf(l.Format())] += int64(l.Rows()) * int64(l.Cols())
	}
	if n[kernels.ArithInt8] > n[kernels.ArithFMA] {
		return kernels.ArithInt8
	}
	return kernels.ArithFMA
}

// Arch is the architecture (its weights and forward pass).
func (m *Model) Arch() Arch { return m.arch }

// WithArch returns a copy of m running arch, a variant of m's own (the same
// architecture with other weights: adapters applied, merged or pruned).
func (m *Model) WithArch(arch Arch) *Model {
	return NewModel(arch, m.info, m.tok, m.layout)
}

// Quantize returns a copy whose weight matrices (all but those tagged
// "keep": embeddings and, as the course's quantize_int8 leaves it, the
// output layer) are re-encoded in format, from their dequantised values. A
// matrix whose rows are not a whole number of the format's blocks stays as
// it is, as llama-quantize falls back for such tensors (an error when that
// is every matrix). The copy holds no
// reference to m's re-encoded matrices, so dropping m frees them.
func (m *Model) Quantize(format string) (models.Model, error) { return m.Convert(format) }

// Convert is Quantize returning the concrete type.
func (m *Model) Convert(format string) (*Model, error) {
	if err := weights.CheckFormat(format); err != nil {
		return nil, err
	}
	if format == m.info.Quant {
		return m, nil
	}
	var kept, done int
	var shape *weights.ShapeError
	arch, err := ConvertArch(m.arch, func(l weights.Linear) (weights.Linear, error) {
		c, err := weights.Convert(l, format)
		if errors.As(err, &shape) {
			kept++
			return l, nil
		}
		done++
		return c, err
	})
	return m.converted(arch, err, format, done, kept, shape)
}

// converted is the model with arch's re-encoded matrices, or the error of
// a conversion that failed or could re-encode no matrix (kept of them, for
// the reason shape, and done re-encoded).
func (m *Model) converted(arch Arch, err error, format string, done, kept int, shape *weights.ShapeError) (*Model, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.info.Name, err)
	}
	if done == 0 && kept > 0 {
		return nil, fmt.Errorf("%s: no matrix can be %s: %w", m.info.Name, format, shape)
	}
	info := m.info
	info.Quant = format
	return NewModel(arch, info, m.tok, m.layout), nil
}
