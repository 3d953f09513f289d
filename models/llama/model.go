// Package llama runs the Llama family of GGUF models the way llama.cpp does
// (src/models/llama.cpp, qwen2.cpp, qwen3.cpp, gemma*.cpp and the ggml CPU
// ops they use): RMSNorm, grouped-query attention with rope, a gated
// feed-forward and an optionally tied output. The architectures differ only
// in the switches of family (arch.go) — rope layout, required q/k/v biases,
// per-head q/k norms, Llama 3's rope frequency factors, Gemma's scalings,
// GELU, extra norms, sliding windows and soft-caps — read in small named
// places of the one forward pass (forward.go).
//
// Weights stay quantized where a kernel multiplies them (Q8_0, Q5_0, Q4_0,
// Q4_K, Q5_K, Q6_K; see matrix); other types are dequantised to float32 at
// load.
package llama

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"chat/models"
	"chat/models/gguf"
)

// Model is a loaded llama network. It is immutable and may be shared by many
// States.
type Model struct {
	cfg    Config
	fam    family
	info   models.Info
	tok    models.Tokenizer
	file   *gguf.File
	embd   *matrix   // [Vocab][Dim]
	norm   []float32 // output_norm
	output *matrix   // [Vocab][Dim], token_embd when tied
	outB   []float32 // optional output.bias (qwen2)
	layers []layer
	// RoPE tables: for position p and pair i, ropeCos[p*RopeDim/2+i];
	// sliding-window layers may have their own (Gemma 2/3).
	ropeCos, ropeSin       []float32
	ropeCosSWA, ropeSinSWA []float32
}

type layer struct {
	attnNorm, ffnNorm []float32
	wq, wk, wv, wo    *matrix
	bq, bk, bv, bo    []float32 // optional biases
	qNorm, kNorm      []float32 // per-head RMSNorm weights of Q and K (qwen3), [HeadDim]
	gate, up, down    *matrix
	bg, bu, bd        []float32 // optional feed-forward biases
	attnPost, ffnPost []float32 // Gemma 2/3 norms of the attention and FFN outputs

	window           int // attend to the last window positions; 0: all
	ropeCos, ropeSin []float32
}

var _ models.Model = (*Model)(nil)

// Load opens a GGUF model of a supported architecture (see families). The file stays mapped while the model is
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
	fam, err := familyOf(arch)
	if err != nil {
		return nil, err
	}
	cfg, err := readConfig(f, arch)
	if err != nil {
		return nil, err
	}
	cfg.NeoX = fam.neox
	if fam.gemma > 0 {
		if err := readGemma(f, &cfg, fam.gemma); err != nil {
			return nil, err
		}
	}
	if fam.qScale {
		cfg.AttnScale = 1 / float32(math.Sqrt(float64(cfg.HeadDim))) // 1.0f/sqrtf(float(n_embd_head))
	}
	tok, err := loadTokenizer(f)
	if err != nil {
		return nil, fmt.Errorf("llama: tokenizer: %w", err)
	}
	m := &Model{cfg: cfg, fam: fam, tok: tok, file: f}
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
	if _, ok := f.Tensor("output.weight"); ok && fam.gemma != 1 && fam.gemma != 2 {
		// (llama.cpp's gemma and gemma2 always use token_embd)
		m.output = ld.matrix("output.weight", cfg.Vocab, cfg.Dim)
	} else {
		m.output = m.embd // tied, as llama.cpp falls back to token_embd
	}
	m.outB = ld.optional("output.bias", cfg.Vocab)
	// block_count comes from the metadata: check it against the tensors in
	// the file before allocating a layer for each (a 1 MB file once said
	// 16777216, and the loader allocated 13 GB before finding none).
	if _, ok := f.Tensor(fmt.Sprintf("blk.%d.attn_norm.weight", cfg.Layers-1)); !ok || cfg.Layers > len(f.Tensors) {
		return nil, fmt.Errorf("llama: metadata %s.block_count = %d, but the file has no tensors for layer %d", cfg.Arch, cfg.Layers, cfg.Layers-1)
	}
	m.layers = make([]layer, cfg.Layers)
	for i := range m.layers {
		p := fmt.Sprintf("blk.%d.", i)
		L := &m.layers[i]
		L.attnNorm = ld.load(p+"attn_norm.weight", cfg.Dim)
		ld.qkv(L, p, qDim, kvDim, cfg.Dim)
		if fam.qkvBias && L.bq == nil { // missing: the error names the tensor
			L.bq = ld.load(p+"attn_q.bias", qDim)
		}
		if fam.qkvBias && L.bk == nil {
			L.bk = ld.load(p+"attn_k.bias", kvDim)
		}
		if fam.qkvBias && L.bv == nil {
			L.bv = ld.load(p+"attn_v.bias", kvDim)
		}
		if fam.qkNorm {
			L.qNorm = ld.load(p+"attn_q_norm.weight", cfg.HeadDim)
			L.kNorm = ld.load(p+"attn_k_norm.weight", cfg.HeadDim)
		}
		L.wo = ld.matrix(p+"attn_output.weight", cfg.Dim, qDim)
		L.bo = ld.optional(p+"attn_output.bias", cfg.Dim)
		L.ffnNorm = ld.load(p+"ffn_norm.weight", cfg.Dim)
		if fam.fusedUp {
			w := ld.matrix(p+"ffn_up.weight", 2*cfg.FFN, cfg.Dim)
			L.gate, L.up = w, w
			if ld.err == nil {
				L.gate, L.up = w.rowRange(0, cfg.FFN), w.rowRange(cfg.FFN, 2*cfg.FFN)
			}
		} else {
			L.gate = ld.matrix(p+"ffn_gate.weight", cfg.FFN, cfg.Dim)
			L.up = ld.matrix(p+"ffn_up.weight", cfg.FFN, cfg.Dim)
		}
		L.down = ld.matrix(p+"ffn_down.weight", cfg.Dim, cfg.FFN)
		L.bg = ld.optional(p+"ffn_gate.bias", cfg.FFN)
		L.bu = ld.optional(p+"ffn_up.bias", cfg.FFN)
		L.bd = ld.optional(p+"ffn_down.bias", cfg.Dim)
		if fam.gemma >= 2 {
			L.attnPost = ld.load(p+"post_attention_norm.weight", cfg.Dim)
			L.ffnPost = ld.load(p+"post_ffw_norm.weight", cfg.Dim)
		}
	}
	var freqs []float32
	if fam.ropeFreqs {
		freqs = ld.optional("rope_freqs.weight", cfg.RopeDim/2)
		if freqs == nil && min(cfg.Context, MaxContext) > cfg.YarnOrigCtx {
			freqs = ld.optional("rope_factors_long.weight", cfg.RopeDim/2)
		} else if freqs == nil {
			freqs = ld.optional("rope_factors_short.weight", cfg.RopeDim/2)
		}
	}
	if err := ld.wait(); err != nil {
		return nil, err
	}
	ctx := min(cfg.Context, MaxContext)
	// The cache is not bounded by the file size; refuse absurd shapes.
	if kv := 2 * int64(cfg.Layers) * int64(ctx) * int64(kvDim) * 4; kv > 64<<30 {
		return nil, fmt.Errorf("llama: a KV cache of %d bytes for %d positions is too large", kv, ctx)
	}
	if freqs == nil && cfg.Llama3 != nil {
		freqs = llama3Factors(cfg.RopeBase, cfg.RopeDim, *cfg.Llama3)
	}
	for _, v := range freqs {
		if !(v > 0) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("llama: rope_freqs.weight holds %v (want positive factors)", v)
		}
	}
	m.ropeCos, m.ropeSin = ropeTables(ctx, &cfg, freqs)
	m.ropeCosSWA, m.ropeSinSWA = m.ropeCos, m.ropeSin
	if cfg.SWAWindow > 0 && (cfg.RopeBaseSWA != cfg.RopeBase || cfg.RopeScaleSWA != cfg.RopeScale) {
		swa := cfg
		swa.RopeBase, swa.RopeScale = cfg.RopeBaseSWA, cfg.RopeScaleSWA
		m.ropeCosSWA, m.ropeSinSWA = ropeTables(ctx, &swa, freqs)
	}
	for i := range m.layers {
		L := &m.layers[i]
		L.ropeCos, L.ropeSin = m.ropeCos, m.ropeSin
		if cfg.isSWA(i) {
			L.window = cfg.SWAWindow
			L.ropeCos, L.ropeSin = m.ropeCosSWA, m.ropeSinSWA
		}
	}
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

// matrix loads a [rows][cols] weight (GGUF dims cols, rows). F16, Q4_0,
// Q4_K, Q5_K and Q6_K stay views of the file, Q8_0 and Q5_0 become int8
// blocks, other types float32 (see matrix).
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
	if t.Type != gguf.TypeQ8_0 && t.Type != gguf.TypeQ5_0 && t.Type != gguf.TypeF16 && !rawType(t.Type) {
		m.f = l.get(t, []int{cols, rows})
		if t.Type == gguf.TypeBF16 {
			m.round = t.Type
		}
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
	if rawType(t.Type) {
		m.raw, m.typ = raw, t.Type
		return m
	}
	if t.Type == gguf.TypeF16 {
		if len(raw) != 2*rows*cols {
			l.err = fmt.Errorf("llama: tensor %s holds %d bytes, want %d", t.Name, len(raw), 2*rows*cols)
			return m
		}
		m.h, m.round = f16View(raw), gguf.TypeF16
		return m
	}
	// Q5_0: its values d·(q-16) are Q8_0 values, multiplied as int8 blocks.
	m.q = make([]int8, rows*cols)
	m.d = make([]float32, rows*cols/32)
	l.async(func() error { unpackQ5_0(raw, m.q, m.d); return nil })
	return m
}

// f16View returns GGUF's little-endian F16 data as half bits: a view of the
// mapping (no copy) on a little-endian host when the data is 2-byte aligned
// (always, with GGUF's alignment), else a copy.
func f16View(raw []byte) []uint16 {
	if len(raw) == 0 {
		return []uint16{}
	}
	one := uint16(1)
	if *(*byte)(unsafe.Pointer(&one)) == 1 && uintptr(unsafe.Pointer(&raw[0]))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&raw[0])), len(raw)/2)
	}
	h := make([]uint16, len(raw)/2)
	for i := range h {
		h[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return h
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

// qkv loads a layer's query, key and value projections: separate
// attn_q/k/v tensors, or one fused attn_qkv (rows q, then k, then v) split
// into views, as llama.cpp's create_tensor_qkv accepts either.
func (l *loader) qkv(L *layer, p string, qDim, kvDim, dim int) {
	if _, ok := l.f.Tensor(p + "attn_qkv.weight"); !ok {
		L.wq = l.matrix(p+"attn_q.weight", qDim, dim)
		L.wk = l.matrix(p+"attn_k.weight", kvDim, dim)
		L.wv = l.matrix(p+"attn_v.weight", kvDim, dim)
		L.bq = l.optional(p+"attn_q.bias", qDim)
		L.bk = l.optional(p+"attn_k.bias", kvDim)
		L.bv = l.optional(p+"attn_v.bias", kvDim)
		return
	}
	w := l.matrix(p+"attn_qkv.weight", qDim+2*kvDim, dim)
	if l.err != nil {
		L.wq, L.wk, L.wv = w, w, w
		return
	}
	L.wq, L.wk, L.wv = w.rowRange(0, qDim), w.rowRange(qDim, qDim+kvDim), w.rowRange(qDim+kvDim, qDim+2*kvDim)
	if b := l.optional(p+"attn_qkv.bias", qDim+2*kvDim); b != nil {
		L.bq, L.bk, L.bv = b[:qDim], b[qDim:qDim+kvDim], b[qDim+kvDim:]
	}
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
	if name == "" || name == cfg.Arch { // converters often write just the arch
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
		for _, v := range [][]float32{L.attnNorm, L.bq, L.bk, L.bv, L.bo, L.qNorm, L.kNorm, L.ffnNorm, L.bg, L.bu, L.bd, L.attnPost, L.ffnPost} {
			wb += 4 * int64(len(v))
		}
	}
	wb += 4*int64(len(m.norm)+len(m.outB)) + m.output.bytes() + m.embd.bytes()/int64(cfg.Vocab)
	quant, best := "f32", int64(-1)
	for t, n := range ld.types {
		if n > best || (n == best && t.String() < quant) {
			quant, best = t.String(), n
		}
	}
	if ft, ok := f.Uint("general.file_type"); ok && fileTypes[ft] != "" {
		quant = fileTypes[ft]
	}
	return models.Info{
		Name:          name,
		Arch:          cfg.Arch,
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

// Tokenizer is the model's tokenizer: SentencePiece or byte-level BPE, as
// tokenizer.ggml.model says. Its EOT is the family's end-of-turn token
// (<|im_end|>, <|eot_id|>, ...) and, for BPE vocabularies, EOG() lists every
// id llama.cpp stops at; special ids and tokenizer.chat_template are in
// GGUF().
func (m *Model) Tokenizer() models.Tokenizer { return m.tok }

// StripsLeadingSpace reports whether the detokenizer drops the leading
// space of the first piece (SentencePiece vocabularies with a space prefix).
func (m *Model) StripsLeadingSpace() bool {
	s, ok := m.tok.(interface{ StripsLeadingSpace() bool })
	return ok && s.StripsLeadingSpace()
}

// fileTypes names general.file_type (llama_ftype in llama.h) the way
// llama.cpp's quantize presets do; the dominant tensor type is used for
// values not listed.
var fileTypes = map[uint64]string{
	0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 8: "q5_0", 9: "q5_1",
	10: "q2_k", 11: "q3_k_s", 12: "q3_k_m", 13: "q3_k_l", 14: "q4_k_s", 15: "q4_k_m",
	16: "q5_k_s", 17: "q5_k_m", 18: "q6_k", 19: "iq2_xxs", 20: "iq2_xs", 21: "q2_k_s",
	22: "iq3_xs", 23: "iq3_xxs", 24: "iq1_s", 25: "iq4_nl", 26: "iq3_s", 27: "iq3_m",
	28: "iq2_s", 29: "iq2_m", 30: "iq4_xs", 31: "iq1_m", 32: "bf16", 36: "tq1_0", 37: "tq2_0",
}

// llama3Factors is the per-pair frequency divisor convert_hf_to_gguf writes
// as rope_freqs.weight for rope_type "llama3" (LlamaModel's
// generate_extra_tensors): 1 for wavelengths shorter than
// OriginalContext/HighFreqFactor, Factor for those longer than
// OriginalContext/LowFreqFactor, a smooth blend in between.
func llama3Factors(base float32, dims int, r Llama3Rope) []float32 {
	lowWave := float64(r.OriginalContext) / r.LowFreqFactor
	highWave := float64(r.OriginalContext) / r.HighFreqFactor
	out := make([]float32, dims/2)
	for i := range out {
		freq := 1 / math.Pow(float64(base), float64(2*i)/float64(dims))
		wave := 2 * math.Pi / freq
		switch {
		case wave < highWave:
			out[i] = 1
		case wave > lowWave:
			out[i] = float32(r.Factor)
		default:
			smooth := (float64(r.OriginalContext)/wave - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			out[i] = float32(1 / ((1-smooth)/r.Factor + smooth))
		}
	}
	return out
}
