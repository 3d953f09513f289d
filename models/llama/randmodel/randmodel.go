// Package randmodel writes small random-weight GGUF models of the Llama
// family (llama, qwen2, qwen3, granite, smollm3, olmo2, and the
// mixture-of-experts qwen3moe, granitemoe and olmoe) whose bytes depend
// only on a Spec and the vocabulary file it copies the tokenizer from.
// They are the inputs of the llama.cpp fixtures in models/llama/testdata/
// llamacpp: scripts/llamacpp writes them with this package and records
// llama.cpp's greedy ids, and the test in models/llama regenerates the same
// files and checks their sha256.
//
// The random numbers are integer-only (splitmix64 and an Irwin-Hall sum of
// 12 16-bit uniforms, exact in float64) followed by one float32 rounding, so the
// files are byte-identical on every platform and Go version.
package randmodel

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"chat/models/gguf"
	"chat/models/nn"
)

// Spec is the shape and contents of one model.
type Spec struct {
	Name  string // fixture name, e.g. "llama-gqa-tied-f32"
	Arch  string // general.architecture: "llama", "qwen2", "qwen3", "granite", "smollm3" or "olmo2"
	Vocab string // vocabulary file in the shared models' vocab folder, e.g. "ggml-vocab-llama-spm.gguf"
	Pre   string // tokenizer.ggml.pre to write instead of the vocabulary file's ("" keeps it)

	Dim, Layers, FFN int
	Heads, KVHeads   int
	HeadDim          int // attention.key_length/value_length; 0 means Dim/Heads (keys not written)
	Context          int
	Eps              float32 // attention.layer_norm_rms_epsilon

	RopeBase          float32 // rope.freq_base; 0 leaves the key out (llama.cpp's default 10000)
	RopeScalingType   string  // rope.scaling.type ("" leaves it out)
	RopeScalingFactor float32 // rope.scaling.factor, written with the type
	RopeOrigContext   int     // rope.scaling.original_context_length (0 leaves it out)
	// Llama3Freqs writes rope_freqs.weight as convert_hf_to_gguf does for
	// rope_type "llama3" (factor, low/high frequency factors and the original
	// context below).
	Llama3Freqs bool
	Llama3      Llama3Rope

	Tied    bool // no output.weight: llama.cpp uses token_embd
	QKVBias bool // attn_q/k/v.bias
	QKNorm  bool // attn_q_norm/attn_k_norm (qwen3)
	// RowQKNorm writes attn_q_norm/attn_k_norm over the whole Q and K rows
	// (OLMoE's, with the usual pre-norms).
	RowQKNorm bool
	// PostNorms writes OLMo-2's blocks: no attn_norm or ffn_norm but
	// post_attention_norm and post_ffw_norm, and attn_q_norm/attn_k_norm
	// over the whole Q and K rows.
	PostNorms bool

	// Granite's scalars, written when LogitScale is set (the others only
	// when not 0).
	EmbeddingScale, ResidualScale, AttentionScale, LogitScale float32
	// RopeOff writes rope.scaling.finetuned false, which turns Granite's
	// rope off.
	RopeOff bool

	// Experts, when set, makes each block's feed-forward a mixture of
	// experts (qwen3moe, granitemoe, olmoe): expert_count and
	// expert_used_count, the F32 router ffn_gate_inp and the experts'
	// matrices stacked in ffn_gate_exps, ffn_up_exps and ffn_down_exps,
	// ExpertFFN wide (written as expert_feed_forward_length when set; else
	// FFN wide, or FFN/ExpertsUsed for qwen3moe, as llama.cpp defaults it).
	Experts, ExpertsUsed, ExpertFFN int

	Type gguf.Type // the 2-D weights' type (any gguf.Write makes); norms, biases and rope_freqs are F32
	// TypeOf, when set, gives each 2-D weight's type by its name instead (a
	// mix such as llama-quantize's Q4_K_M).
	TypeOf func(name string) gguf.Type
	Seed   uint64
	// Std is the standard deviation of the matrices and the embedding; 0
	// means 1.6/sqrt(fan-in) per matrix, so that the logits spread about as
	// much at every width.
	Std float32
	// Tokens, when set, is the tokenizer.* metadata to write instead of a
	// vocabulary file's (Write's vocab is then not read), and GeneralName
	// the general.name to write instead of Name.
	Tokens      []gguf.KV
	GeneralName string

	// ExtraInput is the number of pseudo-random text ids fed after the 15
	// fixed ones (a prompt longer than one of our 64-token prefill chunks).
	ExtraInput int

	types []gguf.Type // the variants Specs makes (default F32 and Q8_0)
}

// Llama3Rope holds the Llama 3.1 rope_scaling parameters.
type Llama3Rope struct {
	Factor, LowFreqFactor, HighFreqFactor float64
	OriginalContext                       int
}

// textIDs follow the BOS in every fixture's input (the BOS is the
// vocabulary's tokenizer.ggml.bos_token_id). All are ordinary tokens in each
// vocabulary used here.
var textIDs = []int{450, 4996, 17354, 1701, 29916, 432, 975, 278, 17366, 11203, 29889, 13, 1576, 2215, 338}

// Specs is the fixture set: every architecture we target, F32 and Q8_0.
func Specs() []Spec {
	base := []Spec{
		{
			// Llama 2 shape with grouped-query attention and a tied output.
			Name: "llama-gqa-tied", Arch: "llama", Vocab: "ggml-vocab-llama-spm.gguf",
			Dim: 64, Layers: 2, FFN: 192, Heads: 4, KVHeads: 2, Context: 512, Eps: 1e-5,
			Tied: true, Seed: 1, Std: 0.2,
		},
		{
			// Untied output and a separate head size (key_length 32 with
			// dim 64 and 4 heads, so q is 128 wide).
			Name: "llama-gqa-untied", Arch: "llama", Vocab: "ggml-vocab-llama-spm.gguf",
			Dim: 64, Layers: 2, FFN: 160, Heads: 4, KVHeads: 2, HeadDim: 32, Context: 512, Eps: 1e-5,
			Seed: 2, Std: 0.2,
		},
		{
			// Llama 3 style: byte-level BPE vocabulary, rope base 500000,
			// tied output and Llama 3.1 rope_freqs (original context shortened to 64 so
			// that all three frequency bands occur with 16-wide heads).
			Name: "llama3-ropefreqs", Arch: "llama", Vocab: "ggml-vocab-llama-bpe.gguf",
			Dim: 64, Layers: 2, FFN: 192, Heads: 4, KVHeads: 1, Context: 512, Eps: 1e-5,
			RopeBase: 500000, Llama3Freqs: true,
			Llama3: Llama3Rope{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 64},
			Tied:   true, // as Llama 3.2 1B/3B (and half the random numbers of a 128k vocabulary)
			Seed:   3,
			Std:    0.2,
		},
		{
			// Linear rope scaling from metadata (rope.scaling.type/factor).
			Name: "llama-ropelinear", Arch: "llama", Vocab: "ggml-vocab-llama-spm.gguf",
			Dim: 64, Layers: 2, FFN: 192, Heads: 4, KVHeads: 2, Context: 512, Eps: 1e-5,
			RopeBase: 20000, RopeScalingType: "linear", RopeScalingFactor: 4,
			Tied: true, Seed: 4, Std: 0.2,
		},
		{
			// YaRN rope scaling (normal rope): factor 4 over an original
			// context of 32, so the 80 positions run past it.
			Name: "llama-ropeyarn", Arch: "llama", Vocab: "ggml-vocab-llama-spm.gguf",
			Dim: 64, Layers: 2, FFN: 192, Heads: 4, KVHeads: 2, Context: 512, Eps: 1e-5,
			RopeScalingType: "yarn", RopeScalingFactor: 4, RopeOrigContext: 32,
			Seed: 7, Std: 0.2,
		},
		{
			// A 101-token prompt: llama.cpp takes it as one batch, we in
			// chunks of 64.
			Name: "llama-longprompt", Arch: "llama", Vocab: "ggml-vocab-llama-spm.gguf",
			Dim: 64, Layers: 2, FFN: 192, Heads: 4, KVHeads: 2, Context: 512, Eps: 1e-5,
			Tied: true, Seed: 8, Std: 0.2, ExtraInput: 85,
			types: []gguf.Type{gguf.TypeF32},
		},
		{
			// F16 weights: ggml multiplies them with F16-rounded
			// activations.
			Name: "llama-half", Arch: "llama", Vocab: "ggml-vocab-llama-spm.gguf",
			Dim: 64, Layers: 2, FFN: 160, Heads: 4, KVHeads: 2, Context: 512, Eps: 1e-5,
			Seed: 9, Std: 0.2,
			types: []gguf.Type{gguf.TypeF16},
		},
		{
			// Qwen2: q/k/v biases, NeoX rope, tied output.
			Name: "qwen2", Arch: "qwen2", Vocab: "ggml-vocab-gpt-2.gguf", Pre: "qwen2",
			Dim: 64, Layers: 2, FFN: 192, Heads: 4, KVHeads: 2, Context: 512, Eps: 1e-6,
			RopeBase: 1000000, Tied: true, QKVBias: true, Seed: 5, Std: 0.2,
		},
		{
			// Qwen3: per-head q/k RMSNorm, NeoX rope, head size 32 apart
			// from dim/heads, untied output.
			Name: "qwen3", Arch: "qwen3", Vocab: "ggml-vocab-gpt-2.gguf", Pre: "qwen2",
			Dim: 64, Layers: 2, FFN: 192, Heads: 4, KVHeads: 2, HeadDim: 32, Context: 512, Eps: 1e-6,
			RopeBase: 1000000, QKNorm: true, Seed: 6, Std: 0.2,
		},
		{
			// Qwen3 with YaRN (NeoX rope), F16 weights as most Qwen3
			// GGUFs ship besides quantized ones.
			Name: "qwen3-ropeyarn", Arch: "qwen3", Vocab: "ggml-vocab-gpt-2.gguf", Pre: "qwen2",
			Dim: 64, Layers: 2, FFN: 192, Heads: 4, KVHeads: 2, HeadDim: 32, Context: 512, Eps: 1e-6,
			RopeBase: 1000000, RopeScalingType: "yarn", RopeScalingFactor: 4, RopeOrigContext: 32,
			QKNorm: true, Seed: 10, Std: 0.2,
			types: []gguf.Type{gguf.TypeF32, gguf.TypeF16},
		},
	}
	var out []Spec
	for _, s := range base {
		types := s.types
		if types == nil {
			types = []gguf.Type{gguf.TypeF32, gguf.TypeQ8_0}
		}
		for _, t := range types {
			s := s
			s.Type = t
			s.types = nil
			s.Name += "-" + t.String()
			out = append(out, s)
		}
	}
	return out
}

// Lookup returns the spec called name.
func Lookup(name string) (Spec, bool) {
	for _, s := range Specs() {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// InputIDs is what the fixture of s feeds: BOS, 15 fixed text ids, then
// ExtraInput pseudo-random ids in [300, 30000).
func (s Spec) InputIDs(vocab *gguf.File) ([]int, error) {
	bos, ok := vocab.Uint("tokenizer.ggml.bos_token_id")
	if !ok {
		return nil, fmt.Errorf("randmodel: vocabulary has no tokenizer.ggml.bos_token_id")
	}
	ids := append([]int{int(bos)}, textIDs...)
	for _, v := range normal(s.Seed, "input", s.ExtraInput, 1) {
		// v is a multiple of 2^-16 in [-6, 6]: an exact integer after scaling.
		ids = append(ids, 300+int(uint64((float64(v)+6)*(1<<16)))%29700)
	}
	return ids, nil
}

// Write writes s as a GGUF file, with the tokenizer.* metadata of vocab
// (or s.Tokens).
func Write(w io.Writer, s Spec, vocab *gguf.File) error {
	if s.Heads <= 0 || s.KVHeads <= 0 || s.Heads%s.KVHeads != 0 || s.HeadDim == 0 && s.Dim%s.Heads != 0 {
		return fmt.Errorf("randmodel: %s: %d heads, %d KV heads, dim %d", s.Name, s.Heads, s.KVHeads, s.Dim)
	}
	tok := s.Tokens
	if tok == nil {
		tok = vocab.KV
	}
	nVocab := -1
	for _, kv := range tok {
		if a, ok := kv.Value.(gguf.ArrayValue); ok && kv.Key == "tokenizer.ggml.tokens" {
			if t, ok := a.Data.([]string); ok {
				nVocab = len(t)
			}
		}
	}
	if nVocab < 0 {
		return fmt.Errorf("randmodel: vocabulary has no tokenizer.ggml.tokens")
	}
	hd := s.HeadDim
	if hd == 0 {
		hd = s.Dim / s.Heads
	}
	qDim, kvDim := s.Heads*hd, s.KVHeads*hd

	a := s.Arch + "."
	u32 := func(k string, v int) gguf.KV { return gguf.KV{Key: a + k, Type: gguf.Uint32, Value: uint32(v)} }
	f32 := func(k string, v float32) gguf.KV { return gguf.KV{Key: a + k, Type: gguf.Float32, Value: v} }
	fileType := uint32(0) // LLAMA_FTYPE_ALL_F32
	switch s.Type {
	case gguf.TypeF16:
		fileType = 1 // LLAMA_FTYPE_MOSTLY_F16
	case gguf.TypeQ8_0:
		fileType = 7 // LLAMA_FTYPE_MOSTLY_Q8_0
	}
	meta := []gguf.KV{
		{Key: "general.architecture", Type: gguf.String, Value: s.Arch},
		{Key: "general.name", Type: gguf.String, Value: cmp.Or(s.GeneralName, s.Name)},
		{Key: "general.file_type", Type: gguf.Uint32, Value: fileType},
		u32("context_length", s.Context),
		u32("embedding_length", s.Dim),
		u32("block_count", s.Layers),
		u32("feed_forward_length", s.FFN),
		u32("attention.head_count", s.Heads),
		u32("attention.head_count_kv", s.KVHeads),
	}
	if s.Experts > 0 {
		meta = append(meta, u32("expert_count", s.Experts), u32("expert_used_count", s.ExpertsUsed))
		if s.ExpertFFN > 0 {
			meta = append(meta, u32("expert_feed_forward_length", s.ExpertFFN))
		}
	}
	if s.HeadDim != 0 {
		meta = append(meta, u32("attention.key_length", hd), u32("attention.value_length", hd))
	}
	meta = append(meta, u32("rope.dimension_count", hd))
	if s.RopeBase != 0 {
		meta = append(meta, f32("rope.freq_base", s.RopeBase))
	}
	if s.RopeScalingType != "" {
		meta = append(meta, gguf.KV{Key: a + "rope.scaling.type", Type: gguf.String, Value: s.RopeScalingType},
			f32("rope.scaling.factor", s.RopeScalingFactor))
	}
	if s.RopeOrigContext != 0 {
		meta = append(meta, u32("rope.scaling.original_context_length", s.RopeOrigContext))
	}
	if s.LogitScale != 0 {
		for _, g := range []struct {
			k string
			v float32
		}{{"embedding_scale", s.EmbeddingScale}, {"residual_scale", s.ResidualScale}, {"attention.scale", s.AttentionScale}} {
			if g.v != 0 {
				meta = append(meta, f32(g.k, g.v))
			}
		}
		meta = append(meta, f32("logit_scale", s.LogitScale))
	}
	if s.RopeOff {
		meta = append(meta, gguf.KV{Key: a + "rope.scaling.finetuned", Type: gguf.Bool, Value: false})
	}
	meta = append(meta, f32("attention.layer_norm_rms_epsilon", s.Eps),
		u32("vocab_size", nVocab))
	hasPre := false
	for _, kv := range tok {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		if kv.Key == "tokenizer.ggml.pre" {
			hasPre = true
			if s.Pre != "" {
				kv.Value = s.Pre
			}
		}
		meta = append(meta, kv)
	}
	if s.Pre != "" && !hasPre {
		meta = append(meta, gguf.KV{Key: "tokenizer.ggml.pre", Type: gguf.String, Value: s.Pre})
	}

	var ts []gguf.WriteTensor
	var encErr error
	// stack writes n matrices [rows][cols] as one tensor of GGUF dims cols,
	// rows, n (n 0: one matrix, dims cols, rows); mat one matrix.
	stack := func(name string, cols, rows, n int, typ gguf.Type) {
		std := s.Std
		if std == 0 {
			std = float32(1.6 / math.Sqrt(float64(cols)))
		}
		dims := []int64{int64(cols), int64(rows)}
		if n > 0 {
			dims = append(dims, int64(n))
		}
		// Encoded here, not by gguf.Write, so that only one tensor's float32
		// values are alive at a time (a 1B model's are 5 GB); the bytes are
		// the same, gguf.Write would call the same Quantize.
		raw, err := gguf.Quantize(typ, normal(s.Seed, name, cols*rows*max(n, 1), std))
		if err != nil {
			encErr = cmp.Or(encErr, fmt.Errorf("randmodel: %s: %w", name, err))
			return
		}
		ts = append(ts, gguf.WriteTensor{Name: name, Dims: dims, Type: typ, Raw: raw})
	}
	typeOf := func(name string) gguf.Type {
		if s.TypeOf != nil {
			return s.TypeOf(name)
		}
		return s.Type
	}
	mat := func(name string, cols, rows int) { stack(name, cols, rows, 0, typeOf(name)) }
	vec := func(name string, n int, mean, std float32) {
		v := normal(s.Seed, name, n, std)
		for i := range v {
			v[i] += mean
		}
		ts = append(ts, gguf.WriteTensor{Name: name, Dims: []int64{int64(n)}, Type: gguf.TypeF32, Data: v})
	}
	// The embedding is larger than the matrices so that the token identity
	// survives the layers; the norms are 1 ± 0.2.
	mat("token_embd.weight", s.Dim, nVocab)
	vec("output_norm.weight", s.Dim, 1, 0.2)
	if !s.Tied {
		mat("output.weight", s.Dim, nVocab)
	}
	if s.Llama3Freqs {
		ts = append(ts, gguf.WriteTensor{Name: "rope_freqs.weight", Dims: []int64{int64(hd / 2)}, Type: gguf.TypeF32,
			Data: nn.Llama3Factors(s.RopeBase, hd, s.Llama3.Factor, s.Llama3.LowFreqFactor, s.Llama3.HighFreqFactor, s.Llama3.OriginalContext)})
	}
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		if !s.PostNorms {
			vec(p+"attn_norm.weight", s.Dim, 1, 0.2)
		}
		mat(p+"attn_q.weight", s.Dim, qDim)
		mat(p+"attn_k.weight", s.Dim, kvDim)
		mat(p+"attn_v.weight", s.Dim, kvDim)
		if s.QKVBias {
			vec(p+"attn_q.bias", qDim, 0, 0.5)
			vec(p+"attn_k.bias", kvDim, 0, 0.5)
			vec(p+"attn_v.bias", kvDim, 0, 0.5)
		}
		if s.QKNorm {
			vec(p+"attn_q_norm.weight", hd, 1, 0.2)
			vec(p+"attn_k_norm.weight", hd, 1, 0.2)
		}
		if s.PostNorms || s.RowQKNorm {
			vec(p+"attn_q_norm.weight", qDim, 1, 0.2)
			vec(p+"attn_k_norm.weight", kvDim, 1, 0.2)
		}
		mat(p+"attn_output.weight", qDim, s.Dim)
		if s.PostNorms {
			vec(p+"post_attention_norm.weight", s.Dim, 1, 0.2)
		} else {
			vec(p+"ffn_norm.weight", s.Dim, 1, 0.2)
		}
		switch {
		case s.Experts > 0:
			ffn := s.ExpertFFN
			if ffn == 0 {
				ffn = s.FFN
				if s.Arch == "qwen3moe" { // llama.cpp's default expert width
					ffn /= s.ExpertsUsed
				}
			}
			// llama-quantize leaves the router F32.
			stack(p+"ffn_gate_inp.weight", s.Dim, s.Experts, 0, gguf.TypeF32)
			for _, e := range []struct {
				name       string
				cols, rows int
			}{{"ffn_gate_exps.weight", s.Dim, ffn}, {"ffn_up_exps.weight", s.Dim, ffn}, {"ffn_down_exps.weight", ffn, s.Dim}} {
				stack(p+e.name, e.cols, e.rows, s.Experts, typeOf(p+e.name))
			}
		default:
			mat(p+"ffn_gate.weight", s.Dim, s.FFN)
			mat(p+"ffn_up.weight", s.Dim, s.FFN)
			mat(p+"ffn_down.weight", s.FFN, s.Dim)
		}
		if s.PostNorms {
			vec(p+"post_ffw_norm.weight", s.Dim, 1, 0.2)
		}
	}
	if encErr != nil {
		return encErr
	}
	return gguf.Write(w, meta, ts)
}

// WriteFile writes s into dir as Name.gguf, with the tokenizer of the
// vocabulary file vocabPath, and returns the path and the file's sha256.
func WriteFile(dir string, s Spec, vocabPath string) (path, sum string, err error) {
	vocab, err := gguf.Open(vocabPath)
	if err != nil {
		return "", "", err
	}
	defer vocab.Close()
	path = filepath.Join(dir, s.Name+".gguf")
	f, err := os.Create(path)
	if err != nil {
		return "", "", err
	}
	h := sha256.New()
	err = Write(io.MultiWriter(f, h), s, vocab)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", "", err
	}
	return path, hex.EncodeToString(h.Sum(nil)), nil
}

// normal returns n pseudo-normal values with standard deviation std, from a
// splitmix64 stream keyed by the seed and the tensor name. Each value is the
// Irwin-Hall sum of 12 uniforms on 16 bits (three 64-bit draws) minus 6
// (mean 0, variance 1, within ±6), computed exactly in float64, times std
// rounded once to float32.
func normal(seed uint64, name string, n int, std float32) []float32 {
	h := fnv.New64a()
	h.Write([]byte(name))
	state := seed*0x9E3779B97F4A7C15 ^ h.Sum64()
	out := make([]float32, n)
	for i := range out {
		var sum uint64
		for j := 0; j < 3; j++ {
			state += 0x9E3779B97F4A7C15
			z := state
			z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
			z = (z ^ (z >> 27)) * 0x94D049BB133111EB
			z ^= z >> 31
			sum += z&0xFFFF + z>>16&0xFFFF + z>>32&0xFFFF + z>>48
		}
		x := float64(sum)/(1<<16) - 6 // exact: sum < 12·2^16
		out[i] = float32(x * float64(std))
	}
	return out
}
