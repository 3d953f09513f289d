// Package course runs the train-llm-from-scratch course's two architectures,
// computing exactly what the course's PyTorch code computes: classic.go
// (learned positions, LayerNorm, ReLU MLP) and modern.go (RMSNorm, RoPE, GQA
// or MLA attention, SwiGLU or mixture-of-experts feed-forward). This file
// reads a checkpoint's tensors into them (course-format.md §2, §3).
package course

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"chat/models"
	"chat/models/nn"
	"chat/models/quote"
	"chat/models/weights"
)

// Model is a loaded course checkpoint.
type Model struct {
	*nn.Model
	cfg *config
}

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
// from is the checkpoint entry raw came from ("cfg", "config" or "").
func newModel(file string, tensors map[string]tensor, raw map[string]any, from string) (*Model, error) {
	cfg, err := parseConfig(raw, from)
	if err != nil {
		return nil, fmt.Errorf("course: %s: %w", file, err)
	}
	inside, outside := unknownKeys(cfg, tensors)
	for _, k := range inside {
		if strings.HasSuffix(k, ".lora_A") || strings.HasSuffix(k, ".lora_B") {
			// The scale alpha/rank is not in the file, so it cannot be merged here.
			return nil, fmt.Errorf("course: %s: %s is an unmerged LoRA adapter; merge it into the weights before saving, as the course's merge_lora does", file, quote.Quote(k))
		}
	}
	if len(inside) > 0 {
		// The course's loader would drop them and run the model without
		// them: a model changed from the course's, which this would not
		// reproduce.
		return nil, fmt.Errorf("course: %s: %s, which the course's model does not have with this config (%s)", file, keyList(inside), cfg)
	}
	src := &tensorSet{file: file, tensors: tensors, seen: map[string]bool{}}
	at := cfg.attention()
	info := models.Info{
		Name:          file,
		Arch:          cfg.Arch,
		Format:        "torch",
		Quant:         "f32",
		VocabSize:     cfg.Vocab,
		ContextLength: cfg.TrainWindow,
		Layers:        cfg.Blocks,
		Embed:         cfg.Embed,
		Heads:         cfg.Heads,
		KVHeads:       at.KVHeads,
		Window:        models.WindowSlide,
	}
	if cfg.Ctx > cfg.TrainWindow {
		info.TrainContext = cfg.Ctx // --ctx-size opens the rest
	}
	var arch nn.Arch
	if cfg.Arch == "classic" {
		arch, err = newClassic(cfg, src)
	} else {
		info.Window = models.WindowHalf
		arch, err = newModern(cfg, src)
	}
	if err != nil {
		err = bindError(file, err, tensors)
		switch {
		case from == "":
			err = fmt.Errorf("%w: the checkpoint stores no cfg or config, so the course's default sizes apply (n_embed=%d n_head=%d n_blocks=%d)", err, cfg.Embed, cfg.Heads, cfg.Blocks)
		case len(outside) > 0:
			err = fmt.Errorf("%w; the checkpoint has %s, which this model does not use", err, keyList(outside))
		}
		return nil, err
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
		"qk_norm": b(c.QKNorm), "attn_gate": b(c.AttnGate), "mla_q_dim": c.HeadDim + c.RopeDim,
	}
}

// unknownKeys are the checkpoint's tensors the model does not read: inside
// its modules (a parameter of a changed model: a bias, an unmerged LoRA
// adapter) or outside them (a reward head, a buffer), which the course's
// loader ignores. Sorted.
func unknownKeys(c *config, tensors map[string]tensor) (inside, outside []string) {
	var shape nn.Arch = newClassicShape(c)
	if c.Arch == "modern" {
		shape = newModernShape(c)
	}
	known := map[string]bool{}
	modules := map[string]bool{}
	for _, n := range nn.Names(shape, "pt", c.dims()) {
		known[n] = true
		first, _, _ := strings.Cut(n, ".")
		modules[first] = true
	}
	for k := range tensors {
		first, _, _ := strings.Cut(k, ".")
		switch {
		case known[k] || k == "pos_idxs": // the classic model's position buffer
		case modules[first]:
			inside = append(inside, k)
		default:
			outside = append(outside, k)
		}
	}
	sort.Strings(inside)
	sort.Strings(outside)
	return inside, outside
}

// keyList names up to three tensors and says how many there are.
func keyList(keys []string) string {
	shown := make([]string, 0, 3)
	for _, k := range keys[:min(3, len(keys))] {
		shown = append(shown, quote.Quote(k))
	}
	s := strings.Join(shown, ", ")
	if len(keys) > 3 {
		return fmt.Sprintf("%d tensors such as %s", len(keys), s)
	}
	if len(keys) == 1 {
		return "tensor " + s
	}
	return "tensors " + s
}

// bindError words the binder's errors the way this package always has.
func bindError(file string, err error, tensors map[string]tensor) error {
	var miss *nn.MissingError
	var shape *nn.ShapeError
	switch {
	case errors.As(err, &miss) && strings.HasSuffix(miss.Name, ".attn.proj.weight") && hasKey(tensors, strings.TrimSuffix(miss.Name, "proj.weight")+"heads.0.query.weight"):
		// course-format.md §0: the projection came on 2026-05-30, and the
		// course's own loader refuses the older files.
		return fmt.Errorf("course: %s: missing %s: the checkpoint predates the attention output projection the course added in May 2026, and the course's code cannot load it either", file, miss.Name)
	case errors.As(err, &miss):
		return fmt.Errorf("course: %s: missing %s, config expects shape %v (%s)", file, miss.Name, miss.Shape, miss.Why)
	case errors.As(err, &shape):
		return fmt.Errorf("course: %s: %s has shape %v, config expects %v (%s)", file, shape.Name, shape.Got, shape.Want, shape.Why)
	}
	return err
}

func hasKey(tensors map[string]tensor, k string) bool { _, ok := tensors[k]; return ok }

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
