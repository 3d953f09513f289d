package course

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"chat/models/quote"
	"chat/models/tokenizer/coursebpe"
	"chat/models/torchpt"
)

// Load reads a course checkpoint (.pt) and builds its model and tokenizer.
func Load(path string) (*Model, error) {
	ck, err := torchpt.Open(path)
	if err != nil {
		return nil, err
	}
	return FromCheckpoint(ck, filepath.Base(path))
}

// FromCheckpoint builds the model from an already read checkpoint; name is
// used in Info and in error messages. The model keeps references to the
// checkpoint's tensor data; matrices it fuses are copied.
func FromCheckpoint(ck *torchpt.Checkpoint, name string) (*Model, error) {
	if ck == nil {
		return nil, fmt.Errorf("course: %s: nil checkpoint", name)
	}
	ts := make(map[string]tensor, len(ck.Tensors))
	for k, t := range ck.Tensors {
		if t == nil {
			continue
		}
		// torchpt converts float16/bfloat16/float64 to float32, as
		// load_state_dict's copy into float32 parameters would.
		ts[k] = tensor{DType: t.DType, Shape: t.Shape, F32: t.F32}
	}
	if err := dequantInt8(ck.Tensors, ts); err != nil {
		return nil, fmt.Errorf("course: %s: %w", name, err)
	}
	m, err := newModel(name, ts, ck.Config, ck.ConfigKey)
	if err != nil {
		return nil, err
	}

	spec, ok := ck.Config["tokenizer"]
	tok, err := coursebpe.FromSpec(spec)
	if err != nil {
		var tk *coursebpe.TiktokenError
		switch {
		case errors.As(err, &tk) && !ok:
			return nil, &loadError{fmt.Sprintf("course: %s: the config names no tokenizer, so the course uses tiktoken %s, and %s", name, tk.Name, tk.Why), err}
		case errors.As(err, &tk):
			return nil, &loadError{fmt.Sprintf("course: %s: the checkpoint's tokenizer is tiktoken %s, and %s", name, tk.Name, tk.Why), err}
		}
		return nil, fmt.Errorf("course: %s: %w", name, err)
	}
	if tok.Size() > m.cfg.Vocab {
		return nil, fmt.Errorf("course: %s: the tokenizer has %d ids but the model only %d (vocab_size)", name, tok.Size(), m.cfg.Vocab)
	}
	info := m.Info()
	if s, ok := ck.Payload["stage"].(string); ok {
		info.Stage = s
	}
	return &Model{Model: m.With(info, tok), cfg: m.cfg}, nil
}

// loadError is a message of its own that still unwraps to the cause, so
// callers can test errors.Is(err, coursebpe.ErrTiktoken).
type loadError struct {
	msg string
	err error
}

func (e *loadError) Error() string { return e.msg }
func (e *loadError) Unwrap() error { return e.err }

// dequantInt8 turns the buffers of the course's Int8Linear (quantize_int8:
// weight_int8, int8 [out, in], and scale, float32 [out, 1]), found in a state
// dict saved after quantizing, into the weight its forward computes with,
// W = Q.float() * scale: the same float32 products, so the same logits.
func dequantInt8(src map[string]*torchpt.Tensor, ts map[string]tensor) error {
	for k, q := range src {
		base, ok := strings.CutSuffix(k, ".weight_int8")
		if !ok || q == nil {
			continue
		}
		s := src[base+".scale"]
		if _, dup := src[base+".weight"]; dup {
			return fmt.Errorf("%s has both weight and weight_int8", quote.Quote(base))
		}
		if s == nil || q.DType != "int8" || len(q.Shape) != 2 || len(q.I64) != q.Numel() ||
			s.F32 == nil || s.Numel() != q.Shape[0] || len(s.F32) != s.Numel() {
			return fmt.Errorf("%s is not an int8 layer the course writes (weight_int8 int8 [out, in] and scale float32 [out, 1])", quote.Quote(base))
		}
		rows, cols := q.Shape[0], q.Shape[1]
		w := make([]float32, rows*cols)
		for i := range rows {
			for j, v := range q.I64[i*cols : (i+1)*cols] {
				w[i*cols+j] = float32(v) * s.F32[i]
			}
		}
		ts[base+".weight"] = tensor{DType: "float32", Shape: q.Shape, F32: w}
		delete(ts, k)
		delete(ts, base+".scale")
	}
	return nil
}
