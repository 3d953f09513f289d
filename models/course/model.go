// Package course runs the train-llm-from-scratch course's two architectures,
// classic (learned positions, LayerNorm, ReLU MLP) and modern (RMSNorm, RoPE,
// GQA or MLA attention, SwiGLU or MoE), in float32, computing exactly what the
// course's PyTorch code computes, with a per-layer KV cache. Model.Quantize
// makes a copy with int8 (the course's quantize_int8), int4 or fp8 block
// weights.
package course

import (
	"fmt"

	"chat/models"
	"chat/models/quant"
)

// Model is a loaded course checkpoint. It is immutable and safe to share
// between States.
type Model struct {
	cfg  *config
	info models.Info
	tok  models.Tokenizer

	embed  []float32 // token_embed [V][C]
	pos    []float32 // classic position_embed [T][C]
	blocks []block
	normW  []float32 // final norm weight (classic layer_norm, modern final_norm)
	normB  []float32 // classic only
	head   []float32 // lm_head [V][C]; the embedding itself when tied
	headB  []float32 // classic only
	rope   rope      // modern: width D (GQA) or Dr (MLA)

	h, hkv, dk, dv int // attention geometry (config.attnDims)
	projW          int // width of the fused input projection per token
	scale          float32
	scratch        quant.ScratchSize // what a State needs for the quantized products
}

// block is one transformer layer. Which fields are set depends on the
// architecture; the fused matrices are built once at load.
type block struct {
	// Shared: the fused input projection, [projW][C] (classic q|k|v, GQA
	// q|k|v|gate, MLA q|kv_down), and the output projection [C][H·dv].
	wIn linear
	wO  linear
	bO  []float32 // classic proj bias

	// Classic.
	ln1W, ln1B, ln2W, ln2B []float32
	w1, w2                 linear // mlp.hidden [4C][C], mlp.proj [C][4C]
	b1, b2                 []float32

	// Modern.
	attnNorm, mlpNorm []float32
	qNorm, kNorm      []float32 // qk_norm
	kvNorm            []float32 // MLA latent norm [R]
	kvUp              linear    // MLA [k_up; v_up], [2·H·D][R]
	mlp               swiglu    // dense
	router            linear    // MoE [E][C]
	experts           []swiglu
	shared            swiglu // MoE shared expert (f == 0 when absent)
}

// newModel checks every tensor against the config and builds the model.
func newModel(file string, tensors map[string]tensor, raw map[string]any) (*Model, error) {
	cfg, err := parseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("course: %s: %w", file, err)
	}
	ts := &tensorSet{file: file, tensors: tensors, seen: map[string]bool{}}
	m := &Model{cfg: cfg}
	m.h, m.hkv, m.dk, m.dv = cfg.attnDims()
	if cfg.Arch == "classic" {
		err = m.loadClassic(ts)
	} else {
		err = m.loadModern(ts)
	}
	if err != nil {
		return nil, err
	}
	m.info = models.Info{
		Name:          file,
		Arch:          cfg.Arch,
		Format:        "torch",
		Quant:         "f32",
		VocabSize:     cfg.Vocab,
		ContextLength: cfg.Ctx,
		Layers:        cfg.Blocks,
		Embed:         cfg.Embed,
		Heads:         cfg.Heads,
		KVHeads:       m.hkv,
		Params:        ts.params,
		Window:        models.WindowSlide,
	}
	m.info.WeightBytes = m.weightBytes()
	if cfg.Arch == "modern" {
		m.info.Window = models.WindowHalf
	}
	return m, nil
}

// Info describes the model.
func (m *Model) Info() models.Info { return m.info }

// Tokenizer is the checkpoint's own tokenizer (config["tokenizer"]).
func (m *Model) Tokenizer() models.Tokenizer { return m.tok }

// TrainWindow is the window the course's generate_text.py uses:
// min(t_context_length or context_length, context_length). A legacy config
// without t_context_length gets default_config's 16.
func (m *Model) TrainWindow() int { return m.cfg.TrainWindow }

// weightBytes counts the weight bytes one decoded token reads: every block
// matrix (only the routed experts of an MoE layer) in its storage format, the
// float32 output layer, norms and biases, and one embedding row (plus one
// position row for classic).
func (m *Model) weightBytes() int64 {
	c := m.cfg
	n := int64(len(m.head) + len(m.headB) + len(m.normW) + len(m.normB) + c.Embed)
	if m.pos != nil {
		n += int64(c.Embed)
	}
	var lin int64
	for i := range m.blocks {
		b := &m.blocks[i]
		for _, w := range [][]float32{b.bO, b.ln1W, b.ln1B, b.ln2W, b.ln2B, b.b1, b.b2,
			b.attnNorm, b.mlpNorm, b.qNorm, b.kNorm, b.kvNorm} {
			n += int64(len(w))
		}
		for _, l := range []*linear{&b.wIn, &b.wO, &b.w1, &b.w2, &b.kvUp, &b.router} {
			lin += l.bytes()
		}
		lin += b.mlp.bytes() + b.shared.bytes()
		if len(b.experts) > 0 {
			lin += int64(c.TopK) * b.experts[0].bytes()
		}
	}
	return 4*n + lin
}

// NewState allocates a KV cache of ContextLength positions and scratch for a
// full-context batch, so a decode step allocates nothing.
func (m *Model) NewState() models.State { return m.newState() }
