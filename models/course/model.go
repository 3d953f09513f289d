// Package course runs the train-llm-from-scratch course's two architectures,
// computing exactly what the course's PyTorch code computes: classic.go
// (learned positions, LayerNorm, ReLU MLP) and modern.go (RMSNorm, RoPE, GQA
// or MLA attention, SwiGLU or mixture-of-experts feed-forward). This file
// reads a checkpoint's tensors into them (course-format.md §2, §3).
package course

import (
	"errors"
	"fmt"

	"chat/models"
	"chat/models/nn"
	"chat/models/weights"
)

// Model is a loaded course checkpoint.
type Model struct {
	*nn.Model
	cfg *config
}

// TrainWindow is the window the course's generate_text.py uses:
// min(t_context_length or context_length, context_length). A legacy config
// without t_context_length gets default_config's 16.
func (m *Model) TrainWindow() int { return m.cfg.TrainWindow }

// Config is the resolved configuration of a checkpoint (read-only for
// converters, which need what the weights do not say: rope theta, norm
// epsilon, the variants).
type Config = config

// Config returns a copy of the model's configuration.
func (m *Model) Config() Config { return *m.cfg }

// tensor is the part of a checkpoint tensor this package needs. It keeps the
// model code independent of the reader's types.
type tensor struct {
	DType string
	Shape []int
	F32   []float32
}

// newModel checks every tensor against the config and builds the model.
func newModel(file string, tensors map[string]tensor, raw map[string]any) (*Model, error) {
	cfg, err := parseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("course: %s: %w", file, err)
	}
	src := &tensorSet{file: file, tensors: tensors, seen: map[string]bool{}}
	at := cfg.attention()
	info := models.Info{
		Name:          file,
		Arch:          cfg.Arch,
		Format:        "torch",
		Quant:         "f32",
		VocabSize:     cfg.Vocab,
		ContextLength: cfg.Ctx,
		Layers:        cfg.Blocks,
		Embed:         cfg.Embed,
		Heads:         cfg.Heads,
		KVHeads:       at.KVHeads,
		Window:        models.WindowSlide,
	}
	var arch nn.Arch
	if cfg.Arch == "classic" {
		arch, err = newClassic(cfg, src)
	} else {
		info.Window = models.WindowHalf
		arch, err = newModern(cfg, src)
	}
	if err != nil {
		return nil, bindError(file, err)
	}
	info.Params = src.params
	if cfg.Arch == "modern" && cfg.Tied {
		info.Params -= int64(cfg.Vocab * cfg.Embed) // one parameter under two names
	}
	layout := models.KVLayout{Layers: cfg.Blocks, KDim: at.KVHeads * at.DK, VDim: at.KVHeads * at.DV, Heads: at.KVHeads}
	return &Model{Model: nn.NewModel(arch, info, nil, layout), cfg: cfg}, nil
}

// dims are the config values the shape tags of classic.go and modern.go use,
// named as the course's config names them.
func (c *config) dims() map[string]int {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	return map[string]int{
		"vocab_size": c.Vocab, "context_length": c.Ctx, "n_embed": c.Embed, "n_head": c.Heads,
		"head_dim": c.HeadDim, "n_kv_head": c.KVHeads, "ffn_hidden": c.FFN, "kv_latent_dim": c.Latent,
		"rope_dim": c.RopeDim, "n_experts": c.Experts, "n_shared_experts": c.Shared,
		"qk_norm": b(c.QKNorm), "attn_gate": b(c.AttnGate),
	}
}

// bindError words the binder's errors the way this package always has.
func bindError(file string, err error) error {
	var miss *nn.MissingError
	var shape *nn.ShapeError
	switch {
	case errors.As(err, &miss):
		return fmt.Errorf("course: %s: missing %s, config expects shape %v (%s)", file, miss.Name, miss.Shape, miss.Why)
	case errors.As(err, &shape):
		return fmt.Errorf("course: %s: %s has shape %v, config expects %v (%s)", file, shape.Name, shape.Got, shape.Want, shape.Why)
	}
	return err
}

// tensorSet is a checkpoint's tensors as an nn.Source. It counts the
// parameters it hands out (each distinct tensor once).
type tensorSet struct {
	file    string
	tensors map[string]tensor
	params  int64
	seen    map[string]bool
}

func (ts *tensorSet) Shape(name string) ([]int, bool) {
	t, ok := ts.tensors[name]
	return t.Shape, ok
}

func (ts *tensorSet) Floats(name string) ([]float32, error) {
	t := ts.tensors[name]
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	if t.F32 == nil {
		return nil, fmt.Errorf("course: %s: %s has dtype %s, want float32", ts.file, name, t.DType)
	}
	if len(t.F32) != n {
		return nil, fmt.Errorf("course: %s: %s holds %d values for shape %v", ts.file, name, len(t.F32), t.Shape)
	}
	if !ts.seen[name] {
		ts.seen[name] = true
		ts.params += int64(n)
	}
	return t.F32, nil
}

func (ts *tensorSet) Linear(name string) (weights.Linear, error) {
	w, err := ts.Floats(name)
	if err != nil {
		return nil, err
	}
	s := ts.tensors[name].Shape
	return weights.NewF32(w, s[0], s[1]), nil
}

var _ nn.Source = (*tensorSet)(nil)

// WithArch returns a copy running arch, a variant of the model's own
// weights (adapters applied, merged or pruned).
func (m *Model) WithArch(arch nn.Arch) models.Model {
	return &Model{Model: m.Model.WithArch(arch), cfg: m.cfg}
}

// Quantize returns a copy with its matrices in format (models/weights'
// names; "int8" is exactly the course's quantize_int8, which leaves the
// embeddings and lm_head in float32 as this does). The float model is not
// changed.
func (m *Model) Quantize(format string) (models.Model, error) { return m.QuantizeCalib(format, "") }

// QuantizeCalib is Quantize with a calibration text for GPTQ and AWQ
// (nn.Model.ConvertCalib).
func (m *Model) QuantizeCalib(format, text string) (models.Model, error) {
	if m.Info().Quant != "f32" && format != m.Info().Quant {
		return nil, fmt.Errorf("course: %s is already %s; quantize the float32 model", m.Info().Name, m.Info().Quant)
	}
	q, err := m.Model.ConvertCalib(format, text)
	if err != nil {
		return nil, fmt.Errorf("course: %w", err)
	}
	if q == m.Model {
		return m, nil
	}
	return &Model{Model: q, cfg: m.cfg}, nil
}
