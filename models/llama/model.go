// Package llama runs the Llama family of GGUF models the way llama.cpp does
// (src/models/<arch>.cpp and the ggml CPU ops they use). Each supported
// general.architecture has its own file whose struct is the table of tensors
// the file must hold and whose Forward reads top to bottom: llama.go,
// qwen2.go, qwen3.go, phi3.go, gemma.go (Gemma 1, 2 and 3), granite.go,
// smollm3.go, olmo2.go, and the mixtures of experts qwen3moe.go,
// granitemoe.go and olmoe.go (their experts in moe.go). This file opens a
// GGUF file, reads the hyper-parameters (config.go) and the tokenizer
// (tokenizer.go), and binds the tensors.
//
// Weights stay in the type the file stores them in, each multiplied by its
// own kernels (F32, F16, the Q and IQ block types; BF16 is widened to
// float32; see models/weights), as views of the memory-mapped file where
// they can be.
package llama

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"chat/models"
	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/quote"
	"chat/models/weights"
)

// Model is a loaded GGUF model. It keeps the file mapped while in use.
type Model struct {
	*nn.Model
	file   *gguf.File
	cfg    Config
	window int // the window the rope's factors were chosen for (ForWindow)
}

var _ models.Model = (*Model)(nil)

// architectures are the supported values of general.architecture, each with
// the constructor of its file.
var architectures = map[string]func(c *Config, f *gguf.File, src *source) (nn.Arch, error){
	"llama":      newLlama,
	"qwen2":      newQwen2,
	"qwen3":      newQwen3,
	"phi3":       newPhi3,
	"granite":    newGranite,
	"smollm3":    newSmolLM3,
	"olmo2":      newOLMo2,
	"qwen3moe":   newQwen3MoE,
	"granitemoe": newGraniteMoE,
	"olmoe":      newOLMoE,
	"gemma":      newGemma,
	"gemma2":     newGemma,
	"gemma3":     newGemma,
}

// Load opens a GGUF model of a supported architecture.
func Load(path string) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	name := gguf.ModelName(path)
	m, err := FromFile(f, name)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	// Building the model read every tensor and copied most of them into
	// memory of their own (weights.inMemory); the mapping's pages it
	// touched would otherwise stay in the RSS beside the copies (3.1 GB
	// for Llama 3.2 1B Q8_0's 1.3 GB). What is still read from the mapping
	// is paged in again on use.
	f.ReleasePages()
	return m, nil
}

// Close releases the file mapping; the model and its caches must not be
// used afterwards.
func (m *Model) Close() error { return m.file.Close() }

// GGUF is the open file, for metadata such as tokenizer.chat_template.
func (m *Model) GGUF() *gguf.File { return m.file }

// Config returns the hyper-parameters.
func (m *Model) Config() Config { return m.cfg }

// StripsLeadingSpace reports whether the detokenizer drops the leading
// space of the first piece (SentencePiece vocabularies with a space prefix).
func (m *Model) StripsLeadingSpace() bool {
	s, ok := m.Tokenizer().(interface{ StripsLeadingSpace() bool })
	return ok && s.StripsLeadingSpace()
}

// WithArch returns a copy running arch, a variant of the model's own
// weights (adapters applied, merged or pruned); it shares the file mapping.
func (m *Model) WithArch(arch nn.Arch) models.Model {
	return m.with(m.Model.WithArch(arch))
}

// with is m running nm (a variant of its arch).
func (m *Model) with(nm *nn.Model) *Model {
	c := *m
	c.Model = nm
	return &c
}

// ForWindow implements models.Windowed: with LongRoPE's two factor sets
// (Phi-3 128k), a window past the original context takes the long ones and
// one within it the short ones, as llama.cpp's llama_model::
// get_rope_factors picks them by a sequence's context (n_ctx_seq >
// n_ctx_orig_yarn). Load chose them for the default window (Config.Context:
// at most MaxContext, so never the long ones of a model whose original
// context is 4,096); --ctx-size reaches here through the engine. The
// attention factor (rope.scaling.attn_factor, Config.YarnAttn) stays: llama.
// cpp's llama_context applies it at every window.
func (m *Model) ForWindow(n int) models.Model {
	a, ok := m.Arch().(roped)
	c := &m.cfg
	f := c.factors(n)
	if !ok || slices.Equal(f, c.factors(m.window)) {
		return m // the window does not change the rope
	}
	w := m.with(m.Model.WithArch(a.withRope(c.rope(c.RopeBase, c.RopeScale, f))))
	w.window = n
	return w
}

// roped is an architecture whose rope ForWindow may replace.
type roped interface {
	withRope(r *nn.Rope) nn.Arch
}

// The architectures that read rope factors (ropeFactors), copied with
// another rope; the weights are shared.
func (m *Llama) withRope(r *nn.Rope) nn.Arch      { c := *m; c.rope = r; return &c }
func (m *Phi3) withRope(r *nn.Rope) nn.Arch       { c := *m; c.rope = r; return &c }
func (m *Granite) withRope(r *nn.Rope) nn.Arch    { c := *m; c.rope = r; return &c }
func (m *GraniteMoE) withRope(r *nn.Rope) nn.Arch { c := *m; c.rope = r; return &c }

// Quantize returns a copy with its matrices (all but the token embedding)
// re-encoded in format, from a float file (f32, f16, bf16) only: like
// llama-quantize, it does not quantise quantised weights again.
func (m *Model) Quantize(format string) (models.Model, error) { return m.QuantizeCalib(format, "") }

// QuantizeCalib is Quantize with a calibration text for GPTQ and AWQ
// (nn.Model.ConvertCalib).
func (m *Model) QuantizeCalib(format, text string) (models.Model, error) {
	if q := m.Info().Quant; q != "f32" && q != "f16" && q != "bf16" && format != q {
		return nil, fmt.Errorf("llama: %s is already %s; quantize a float file (f32, f16, bf16)", m.Info().Name, q)
	}
	c, err := m.Model.ConvertCalib(format, text)
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	if c == m.Model {
		return m, nil
	}
	return m.with(c), nil
}

// FromFile builds the model from an open GGUF file. fileName is used for
// Info().Name when the metadata has no better name.
func FromFile(f *gguf.File, fileName string) (*Model, error) {
	arch, _ := f.String("general.architecture")
	build, ok := architectures[arch]
	if !ok {
		names := make([]string, 0, len(architectures))
		for n := range architectures {
			names = append(names, n)
		}
		sort.Strings(names)
		if arch == "" {
			return nil, fmt.Errorf("llama: the file names no general.architecture (supported: %s)", strings.Join(names, ", "))
		}
		return nil, fmt.Errorf("llama: unsupported architecture %s (supported: %s)", quote.Quote(arch), strings.Join(names, ", "))
	}
	cfg, err := readConfig(f, arch)
	if err != nil {
		return nil, err
	}
	te, ok := f.Tensor("token_embd.weight")
	if !ok || len(te.Dims) != 2 {
		return nil, fmt.Errorf("llama: tensor token_embd.weight missing or not 2-D")
	}
	cfg.Vocab = int(te.Dims[1])
	// A vocabulary the embedding does not match is refused before a
	// tokenizer is built from it, which takes several times the tokens' bytes.
	if toks, ok := f.Strings("tokenizer.ggml.tokens"); ok && len(toks) != cfg.Vocab {
		return nil, fmt.Errorf("llama: token_embd has %d rows but the vocabulary %d tokens", cfg.Vocab, len(toks))
	}
	tok, err := loadTokenizer(f)
	if err != nil {
		return nil, fmt.Errorf("llama: tokenizer: %w", err)
	}
	if cfg.Vocab != tok.Size() {
		return nil, fmt.Errorf("llama: token_embd has %d rows but the vocabulary %d tokens", cfg.Vocab, tok.Size())
	}
	if err := checkBlocks(f, cfg.Layers); err != nil {
		return nil, err
	}
	if err := checkFused(f, cfg); err != nil {
		return nil, err
	}
	cfg.TrainContext = cfg.Context
	cfg.Context = min(cfg.Context, MaxContext)
	// The cache is not bounded by the file size; refuse absurd shapes.
	kvDim := cfg.KVHeads * cfg.HeadDim
	if kv := 2 * int64(cfg.Layers) * int64(cfg.Context) * int64(kvDim) * 4; kv > 64<<30 {
		return nil, fmt.Errorf("llama: a KV cache of %d bytes for %d positions is too large", kv, cfg.Context)
	}
	src := &source{f: f, cfg: &cfg, types: map[gguf.Type]int64{}}
	a, err := build(&cfg, f, src)
	if err != nil {
		return nil, bindError(err)
	}
	info := makeInfo(f, fileName, &cfg, src)
	layout := models.KVLayout{Layers: cfg.Layers, KDim: kvDim, VDim: kvDim, Heads: cfg.KVHeads}
	return &Model{Model: nn.NewModel(a, info, tok, layout), file: f, cfg: cfg, window: cfg.Context}, nil
}

// checkBlocks compares block_count with the blocks whose tensors the file
// holds, before anything is allocated per block: a small file cannot make
// the loader allocate millions of layers.
func checkBlocks(f *gguf.File, layers int) error {
	have := 0
	for i := range f.Tensors {
		rest, ok := strings.CutPrefix(f.Tensors[i].Name, "blk.")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(num); err == nil && n >= have {
			have = n + 1
		}
	}
	if layers > have {
		return fmt.Errorf("llama: block_count is %d but the file holds tensors for %d blocks", layers, have)
	}
	return nil
}

// checkFused checks each fused attn_qkv tensor's rows against the heads:
// source.fused hands out attn_q, attn_k and attn_v as row ranges of it, and
// the binder checks only the ranges' shapes (a short one was sliced past
// its end).
func checkFused(f *gguf.File, cfg Config) error {
	want := int64((cfg.Heads + 2*cfg.KVHeads) * cfg.HeadDim)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if !strings.Contains(t.Name, ".attn_qkv.") {
			continue
		}
		if n := len(t.Dims); n == 0 || n > 2 || t.Dims[n-1] != want {
			return fmt.Errorf("llama: tensor %s has shape %v, want %d rows (q_dim + 2·kv_dim)", quote.Quote(t.Name), t.Dims, want)
		}
	}
	return nil
}

// bindError words the binder's errors as this package always has.
func bindError(err error) error {
	var miss *nn.MissingError
	var shape *nn.ShapeError
	switch {
	case errors.As(err, &miss):
		return fmt.Errorf("llama: tensor %s missing", miss.Name)
	case errors.As(err, &shape):
		return fmt.Errorf("llama: tensor %s has shape %v, want %v (%s)", shape.Name, shape.Got, shape.Want, shape.Why)
	}
	return err
}

// source is a GGUF file's tensors as an nn.Source: shapes row-major (ggml
// lists them the other way round), matrices as views where the kernels take
// the type, and a fused attn_qkv split into attn_q, attn_k and attn_v views
// when the file has no separate ones, as llama.cpp's create_tensor_qkv
// accepts either. It counts the elements of each matrix type it hands out.
type source struct {
	f     *gguf.File
	cfg   *Config
	types map[gguf.Type]int64
	whole map[string]weights.Linear // fused tensors, loaded (copied) once for their parts
}

// fused returns the attn_qkv tensor a missing attn_q/k/v name is a part of,
// and the part's rows.
func (s *source) fused(name string) (string, int, int, bool) {
	if _, ok := s.f.Tensor(name); ok {
		return "", 0, 0, false
	}
	q, kv := s.cfg.Heads*s.cfg.HeadDim, s.cfg.KVHeads*s.cfg.HeadDim
	for part, rows := range map[string][2]int{"attn_q.": {0, q}, "attn_k.": {q, q + kv}, "attn_v.": {q + kv, q + 2*kv}} {
		if i := strings.Index(name, part); i >= 0 {
			whole := name[:i] + "attn_qkv." + name[i+len(part):]
			if _, ok := s.f.Tensor(whole); ok {
				return whole, rows[0], rows[1], true
			}
		}
	}
	return "", 0, 0, false
}

func (s *source) Shape(name string) ([]int, bool) {
	if whole, r0, r1, ok := s.fused(name); ok {
		shape, _ := s.Shape(whole)
		if len(shape) == 2 {
			return []int{r1 - r0, shape[1]}, true
		}
		return []int{r1 - r0}, true
	}
	t, ok := s.f.Tensor(name)
	if !ok {
		return nil, false
	}
	shape := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		shape[len(t.Dims)-1-i] = int(d)
	}
	return shape, true
}

func (s *source) Linear(name string) (weights.Linear, error) {
	if whole, r0, r1, ok := s.fused(name); ok {
		w, ok := s.whole[whole]
		if !ok {
			var err error
			if w, err = s.Linear(whole); err != nil {
				return nil, err
			}
			if s.whole == nil {
				s.whole = map[string]weights.Linear{}
			}
			s.whole[whole] = w
		}
		return w.Slice(r0, r1), nil
	}
	t, _ := s.f.Tensor(name)
	raw, err := s.f.TensorData(t)
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	w, err := weights.FromGGUF(t.Type, raw, int(t.Dims[1]), int(t.Dims[0]))
	if err != nil {
		return nil, fmt.Errorf("llama: tensor %s: %w", name, err)
	}
	s.f.ReleaseBytes(raw) // copied, or paged in again when read (Load releases them all at the end too)
	s.types[t.Type] += t.Elements()
	return w, nil
}

// Stack is a 3-D tensor (ggml dims [cols, rows, n]) as its n matrices,
// each made from its own run of the file's bytes, so a quantized stack of
// experts is never widened or copied whole.
func (s *source) Stack(name string) ([]weights.Linear, error) {
	t, _ := s.f.Tensor(name)
	raw, err := s.f.TensorData(t)
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	n := int(t.Dims[2])
	if n == 0 || len(raw)%n != 0 {
		return nil, fmt.Errorf("llama: tensor %s: %d bytes do not split into %d matrices", name, len(raw), n)
	}
	part := len(raw) / n
	out := make([]weights.Linear, n)
	for e := range out {
		if out[e], err = weights.FromGGUF(t.Type, raw[e*part:(e+1)*part:(e+1)*part], int(t.Dims[1]), int(t.Dims[0])); err != nil {
			return nil, fmt.Errorf("llama: tensor %s: %w", name, err)
		}
		s.f.ReleaseBytes(raw[e*part : (e+1)*part])
	}
	s.types[t.Type] += t.Elements()
	return out, nil
}

// Fused loads the named matrices stacked into one (nn.Fuser): the file's
// own fused tensor when they are its parts in order (Phi-3's attn_qkv),
// else their tensors stacked (weights.StackGGUF) when they have one type;
// nil otherwise.
func (s *source) Fused(names []string) (weights.Linear, error) {
	if whole, r0, _, ok := s.fused(names[0]); ok && r0 == 0 {
		end := 0
		for _, name := range names {
			w, r0, r1, ok := s.fused(name)
			if !ok || w != whole || r0 != end {
				return nil, nil
			}
			end = r1
		}
		if shape, _ := s.Shape(whole); len(shape) != 2 || shape[0] != end {
			return nil, nil
		}
		return s.Linear(whole)
	}
	var t gguf.Type
	raws, rows := make([][]byte, len(names)), make([]int, len(names))
	var elems, cols int64
	for i, name := range names {
		ti, ok := s.f.Tensor(name)
		if !ok || len(ti.Dims) != 2 || i > 0 && (ti.Type != t || ti.Dims[0] != cols) {
			return nil, nil
		}
		t, cols = ti.Type, ti.Dims[0]
		raw, err := s.f.TensorData(ti)
		if err != nil {
			return nil, fmt.Errorf("llama: %w", err)
		}
		raws[i], rows[i] = raw, int(ti.Dims[1])
		elems += ti.Elements()
	}
	w, err := weights.StackGGUF(t, raws, rows, int(cols))
	if err != nil {
		return nil, fmt.Errorf("llama: tensors %s: %w", strings.Join(names, ", "), err)
	}
	if w != nil {
		s.types[t] += elems
		for _, raw := range raws {
			s.f.ReleaseBytes(raw) // as Linear does
		}
	}
	return w, nil
}

func (s *source) Floats(name string) ([]float32, error) {
	if whole, r0, r1, ok := s.fused(name); ok {
		w, err := s.Floats(whole)
		if err != nil {
			return nil, err
		}
		return w[r0:r1], nil
	}
	t, _ := s.f.Tensor(name)
	if !gguf.CanDequantize(t.Type) {
		return nil, fmt.Errorf("llama: tensor %s has type %s, which is not supported", name, t.Type)
	}
	w, err := s.f.TensorFloat32(name)
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	return w, nil
}

// optionalFloats reads a tensor that may be absent (nil then).
func (s *source) optionalFloats(name string, n int) ([]float32, error) {
	shape, ok := s.Shape(name)
	if !ok {
		return nil, nil
	}
	if len(shape) != 1 || shape[0] != n {
		return nil, fmt.Errorf("llama: tensor %s has shape %v, want [%d]", name, shape, n)
	}
	return s.Floats(name)
}

// dims are the hyper-parameters the architectures' shape tags use.
func (c *Config) dims() map[string]int {
	return map[string]int{
		"vocab": c.Vocab, "dim": c.Dim, "ffn": c.FFN, "head_dim": c.HeadDim,
		"q_dim": c.Heads * c.HeadDim, "kv_dim": c.KVHeads * c.HeadDim,
		"experts": c.Experts, "ffn_exp": c.ExpertFFN,
	}
}

// ropeFactors reads the file's per-pair rope frequency divisors into c and
// returns those of the default window (factors).
func ropeFactors(c *Config, src *source) ([]float32, error) {
	half := c.RopeDim / 2
	for _, t := range []struct {
		name string
		to   *[]float32
	}{{"rope_freqs.weight", &c.ropeFreqs}, {"rope_factors_short.weight", &c.ropeShort}, {"rope_factors_long.weight", &c.ropeLong}} {
		freqs, err := src.optionalFloats(t.name, half)
		if err != nil {
			return nil, err
		}
		for _, v := range freqs {
			if !(v > 0) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("llama: %s holds %v (want positive factors)", t.name, v)
			}
		}
		*t.to = freqs
	}
	return c.factors(c.Context), nil
}

// factors are the rope frequency divisors for a window of n positions:
// rope_freqs.weight (Llama 3.1), else LongRoPE's long factors when n
// exceeds the original context and its short ones otherwise (llama_model::
// get_rope_factors), else the Llama 3 factors computed from metadata.
func (c *Config) factors(n int) []float32 {
	freqs := c.ropeFreqs
	if freqs == nil {
		freqs = c.ropeShort
		if n > c.YarnOrigCtx {
			freqs = c.ropeLong
		}
	}
	if freqs == nil && c.Llama3 != nil {
		r := c.Llama3
		freqs = nn.Llama3Factors(c.RopeBase, c.RopeDim, r.Factor, r.LowFreqFactor, r.HighFreqFactor, r.OriginalContext)
	}
	return freqs
}

// rope builds the tables of c's rope (base and scale given).
func (c *Config) rope(base, scale float32, factors []float32) *nn.Rope {
	return nn.GGMLRope(c.RopeDim, max(c.Context, c.TrainContext), c.NeoX, nn.RopeScaling{
		Base: base, Scale: scale, Factors: factors,
		YarnExt: c.YarnExt, YarnAttn: c.YarnAttn, YarnOrigCtx: c.YarnOrigCtx,
	})
}

// attention is c's attention geometry with the scores scaled by
// 1/sqrtf(head_dim) (llama.cpp's kq_scale), or not at all when the queries
// are scaled instead.
func (c *Config) attention(qScaled bool) nn.Attention {
	a := nn.Attention{Heads: c.Heads, KVHeads: c.KVHeads, DK: c.HeadDim, DV: c.HeadDim,
		Scale: 1 / float32(math.Sqrt(float64(c.HeadDim)))}
	if qScaled {
		a.Scale = 1
	}
	return a
}

func makeInfo(f *gguf.File, fileName string, cfg *Config, src *source) models.Info {
	name, _ := f.String("general.name")
	if name == "" || name == cfg.Arch { // converters often write just the arch
		name = fileName
	}
	// The name goes into the banner, every message about the model and
	// serve's ids: a megabyte of it would make each of them a megabyte.
	name = quote.Cut(name, quote.Max)
	var params int64
	for i := range f.Tensors {
		params += f.Tensors[i].Elements()
	}
	quant, best := "f32", int64(-1)
	for t, n := range src.types {
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
		ContextLength: cfg.Context,
		TrainContext:  trainContext(cfg),
		Layers:        cfg.Layers,
		Embed:         cfg.Dim,
		Heads:         cfg.Heads,
		KVHeads:       cfg.KVHeads,
		Params:        params,
		Window:        models.WindowHalf,
		Pooling:       cfg.Pooling,
	}
}

// trainContext is Info.TrainContext: the trained context when it is longer
// than the default window.
func trainContext(cfg *Config) int {
	if cfg.TrainContext > cfg.Context {
		return cfg.TrainContext
	}
	return 0
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
