// Package llama is the Llama architecture as llama.cpp runs it
// (LLM_ARCH_LLAMA: src/llama-model.cpp, llm_build_llama, and the ggml CPU
// ops it uses): RMSNorm, grouped-query attention with "normal" RoPE (adjacent
// pairs rotated, since convert_hf_to_gguf permutes Q/K for it), a SwiGLU
// feed-forward and an optionally tied output, loaded from GGUF.
package llama

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"chat/models"
	"chat/models/gguf"
	"chat/models/tokenizer/gpt2bpe"
	"chat/models/tokenizer/spm"
)

// Model is a loaded llama network. It is immutable and may be shared by many
// States.
type Model struct {
	cfg    Config
	info   models.Info
	tok    models.Tokenizer
	file   *gguf.File
	embd   *matrix   // [Vocab][Dim]
	norm   []float32 // output_norm
	output *matrix   // [Vocab][Dim], token_embd when tied
	layers []layer
	// RoPE tables: for position p and pair i, ropeCos[p*RopeDim/2+i].
	ropeCos, ropeSin []float32
}

type layer struct {
	attnNorm, ffnNorm []float32
	wq, wk, wv, wo    *matrix
	bq, bk, bv, bo    []float32 // optional biases
	gate, up, down    *matrix
}

var _ models.Model = (*Model)(nil)

// Load opens a GGUF llama model. The file stays mapped while the model is
// in use; F32 weights are views of the mapping, other types are dequantised
// to float32 at load.
func Load(path string) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	m, err := FromFile(f, name)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return m, nil
}

// Close releases the file mapping; the model and its states must not be
// used afterwards.
func (m *Model) Close() error { return m.file.Close() }

// FromFile builds the model from an open GGUF file. fileName is used for
// Info().Name when the metadata has no better name.
func FromFile(f *gguf.File, fileName string) (*Model, error) {
	arch, _ := f.String("general.architecture")
	if arch != "llama" {
		return nil, fmt.Errorf("llama: unsupported architecture %q (only \"llama\" is supported)", arch)
	}
	cfg, err := readConfig(f, arch)
	if err != nil {
		return nil, err
	}
	tok, err := loadTokenizer(f)
	if err != nil {
		return nil, fmt.Errorf("llama: tokenizer: %w", err)
	}
	m := &Model{cfg: cfg, tok: tok, file: f}
	ld := &loader{f: f}
	te, ok := f.Tensor("token_embd.weight")
	if !ok || len(te.Dims) != 2 {
		return nil, fmt.Errorf("llama: tensor token_embd.weight missing or not 2-D")
	}
	m.cfg.Vocab = int(te.Dims[1])
	cfg = m.cfg
	if cfg.Vocab != tok.Size() {
		return nil, fmt.Errorf("llama: token_embd has %d rows but the vocabulary %d tokens", cfg.Vocab, tok.Size())
	}
	qDim, kvDim := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	m.embd = ld.matrix("token_embd.weight", cfg.Vocab, cfg.Dim)
	m.norm = ld.load("output_norm.weight", cfg.Dim)
	if _, ok := f.Tensor("output.weight"); ok {
		m.output = ld.matrix("output.weight", cfg.Vocab, cfg.Dim)
	} else {
		m.output = m.embd // tied, as llama.cpp falls back to token_embd
	}
	m.layers = make([]layer, cfg.Layers)
	for i := range m.layers {
		p := fmt.Sprintf("blk.%d.", i)
		L := &m.layers[i]
		L.attnNorm = ld.load(p+"attn_norm.weight", cfg.Dim)
		L.wq = ld.matrix(p+"attn_q.weight", qDim, cfg.Dim)
		L.wk = ld.matrix(p+"attn_k.weight", kvDim, cfg.Dim)
		L.wv = ld.matrix(p+"attn_v.weight", kvDim, cfg.Dim)
		L.wo = ld.matrix(p+"attn_output.weight", cfg.Dim, qDim)
		L.bq = ld.optional(p+"attn_q.bias", qDim)
		L.bk = ld.optional(p+"attn_k.bias", kvDim)
		L.bv = ld.optional(p+"attn_v.bias", kvDim)
		L.bo = ld.optional(p+"attn_output.bias", cfg.Dim)
		L.ffnNorm = ld.load(p+"ffn_norm.weight", cfg.Dim)
		L.gate = ld.matrix(p+"ffn_gate.weight", cfg.FFN, cfg.Dim)
		L.up = ld.matrix(p+"ffn_up.weight", cfg.FFN, cfg.Dim)
		L.down = ld.matrix(p+"ffn_down.weight", cfg.Dim, cfg.FFN)
	}
	freqs := ld.optional("rope_freqs.weight", cfg.RopeDim/2)
	if err := ld.wait(); err != nil {
		return nil, err
	}
	ctx := min(cfg.Context, MaxContext)
	// The cache is not bounded by the file size; refuse absurd shapes.
	if kv := 2 * int64(cfg.Layers) * int64(ctx) * int64(kvDim) * 4; kv > 64<<30 {
		return nil, fmt.Errorf("llama: a KV cache of %d bytes for %d positions is too large", kv, ctx)
	}
	m.ropeCos, m.ropeSin = ropeTables(ctx, cfg.RopeDim, cfg.RopeBase, cfg.RopeScale, freqs)
	m.info = m.makeInfo(f, fileName, ld, ctx)
	return m, nil
}

// loader fetches tensors by name, checks their shapes, and remembers the
// first error so the model's tensor list reads top to bottom.
type loader struct {
	f     *gguf.File
	err   error
	types map[gguf.Type]int64 // elements of 2-D weights by storage type

	wg       sync.WaitGroup
	sem      chan struct{}
	mu       sync.Mutex
	asyncErr error
}

func (l *loader) load(name string, dims ...int) []float32 {
	if l.err != nil {
		return nil
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("llama: tensor %s missing", name)
		return nil
	}
	return l.get(t, dims)
}

// matrix loads a [rows][cols] weight (GGUF dims cols, rows). Q8_0 stays
// quantized; other types become float32.
func (l *loader) matrix(name string, rows, cols int) *matrix {
	m := &matrix{rows: rows, cols: cols}
	if l.err != nil {
		return m
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("llama: tensor %s missing", name)
		return m
	}
	if t.Type != gguf.TypeQ8_0 {
		m.f = l.get(t, []int{cols, rows})
		return m
	}
	if len(t.Dims) != 2 || t.Dims[0] != int64(cols) || t.Dims[1] != int64(rows) {
		l.err = fmt.Errorf("llama: tensor %s has shape %v, want %v", t.Name, t.Dims, []int{cols, rows})
		return m
	}
	raw, err := l.f.TensorData(t)
	if err != nil {
		l.err = fmt.Errorf("llama: %w", err)
		return m
	}
	l.count(t)
	m.q = make([]int8, rows*cols)
	m.d = make([]float32, rows*cols/32)
	l.async(func() error { unpackQ8_0(raw, m.q, m.d); return nil })
	return m
}

func (l *loader) count(t *gguf.TensorInfo) {
	if l.types == nil {
		l.types = map[gguf.Type]int64{}
	}
	l.types[t.Type] += t.Elements()
}

// async runs work on one of GOMAXPROCS workers; wait collects errors.
func (l *loader) async(work func() error) {
	if l.sem == nil {
		l.sem = make(chan struct{}, runtime.GOMAXPROCS(0))
	}
	l.wg.Add(1)
	l.sem <- struct{}{}
	go func() {
		defer func() { <-l.sem; l.wg.Done() }()
		if err := work(); err != nil {
			l.mu.Lock()
			if l.asyncErr == nil {
				l.asyncErr = err
			}
			l.mu.Unlock()
		}
	}()
}

func (l *loader) optional(name string, dims ...int) []float32 {
	if l.err != nil {
		return nil
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		return nil
	}
	return l.get(t, dims)
}

func (l *loader) get(t *gguf.TensorInfo, dims []int) []float32 {
	match := len(t.Dims) == len(dims)
	for i := 0; match && i < len(dims); i++ {
		match = t.Dims[i] == int64(dims[i])
	}
	if !match {
		l.err = fmt.Errorf("llama: tensor %s has shape %v, want %v", t.Name, t.Dims, dims)
		return nil
	}
	if !gguf.CanDequantize(t.Type) {
		l.err = fmt.Errorf("llama: tensor %s has type %s, which is not supported", t.Name, t.Type)
		return nil
	}
	if len(dims) == 2 {
		l.count(t)
	}
	if t.Type == gguf.TypeF32 {
		w, err := l.f.TensorFloat32(t.Name) // a view of the mapping
		if err != nil {
			l.err = fmt.Errorf("llama: %w", err)
		}
		return w
	}
	// Other types are dequantised on the CPUs in parallel; wait collects
	// the results.
	raw, err := l.f.TensorData(t)
	if err != nil {
		l.err = fmt.Errorf("llama: %w", err)
		return nil
	}
	w := make([]float32, t.Elements())
	l.async(func() error {
		if err := gguf.Dequantize(t.Type, raw, w); err != nil {
			return fmt.Errorf("llama: tensor %s: %w", t.Name, err)
		}
		return nil
	})
	return w
}

// wait finishes the dequantisation and returns the first error.
func (l *loader) wait() error {
	l.wg.Wait()
	if l.err != nil {
		return l.err
	}
	return l.asyncErr
}

func (m *Model) makeInfo(f *gguf.File, fileName string, ld *loader, ctx int) models.Info {
	cfg := m.cfg
	name, _ := f.String("general.name")
	if name == "" || name == "llama" { // converters often write just the arch
		name = fileName
	}
	var params int64
	for i := range f.Tensors {
		params += f.Tensors[i].Elements()
	}
	// Weight bytes read per decoded token: every layer matrix and vector,
	// the output matrix, and one embedding row.
	var wb int64
	for _, L := range m.layers {
		for _, w := range []*matrix{L.wq, L.wk, L.wv, L.wo, L.gate, L.up, L.down} {
			wb += w.bytes()
		}
		for _, v := range [][]float32{L.attnNorm, L.bq, L.bk, L.bv, L.bo, L.ffnNorm} {
			wb += 4 * int64(len(v))
		}
	}
	wb += 4*int64(len(m.norm)) + m.output.bytes() + m.embd.bytes()/int64(cfg.Vocab)
	quant, best := "f32", int64(-1)
	for t, n := range ld.types {
		if n > best || (n == best && t.String() < quant) {
			quant, best = t.String(), n
		}
	}
	return models.Info{
		Name:          name,
		Arch:          "llama",
		Format:        "gguf",
		Quant:         quant,
		VocabSize:     cfg.Vocab,
		ContextLength: ctx,
		Layers:        cfg.Layers,
		Embed:         cfg.Dim,
		Heads:         cfg.Heads,
		KVHeads:       cfg.KVHeads,
		Params:        params,
		WeightBytes:   wb,
		Window:        models.WindowHalf,
	}
}

// Info describes the model.
func (m *Model) Info() models.Info { return m.info }

// GGUF is the open file, for metadata such as tokenizer.chat_template.
func (m *Model) GGUF() *gguf.File { return m.file }

// Config returns the hyper-parameters.
func (m *Model) Config() Config { return m.cfg }

// Tokenizer is the model's SPM tokenizer.
func (m *Model) Tokenizer() models.Tokenizer { return m.tok }

// StripsLeadingSpace reports whether the detokenizer drops the leading
// space of the first piece (SentencePiece vocabularies with a space prefix).
func (m *Model) StripsLeadingSpace() bool {
	s, ok := m.tok.(interface{ StripsLeadingSpace() bool })
	return ok && s.StripsLeadingSpace()
}

// loadTokenizer picks the tokenizer tokenizer.ggml.model names: "llama"
// (SentencePiece) or "gpt2" (byte-level BPE, as Llama 3 uses).
func loadTokenizer(f *gguf.File) (models.Tokenizer, error) {
	switch model, _ := f.String("tokenizer.ggml.model"); model {
	case "llama":
		return spm.FromGGUF(f)
	case "gpt2":
		return gpt2bpe.FromGGUF(f)
	default:
		return nil, fmt.Errorf("tokenizer.ggml.model %q is not supported", model)
	}
}
