package llama

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/kvcache"
	"chat/models/nn"
	"chat/models/testmodels"
)

// shapeSpec is a small random llama-family model of a shape the recorded
// fixtures (randmodel.Specs, gemmaSpecs) do not have: head sizes 80 to 256,
// a head size apart from dim/heads, MQA and GQA ratios 3 and 8, FFN widths
// that are no multiple of 32, odd vocabularies, rope bases and scalings,
// and block-quantized weights.
type shapeSpec struct {
	Name, Arch      string
	Dim, FFN        int
	Heads, KVHeads  int
	HD              int // attention.key_length/value_length; 0: Dim/Heads, keys left out
	Vocab           int // ≥ 264: the synthetic vocabulary and filler tokens
	Tied            bool
	RopeBase        float32 // 0 leaves rope.freq_base out
	Scaling         string  // rope.scaling.type ("" leaves it out)
	Factor          float32 // rope.scaling.factor
	Llama3Freqs     bool    // rope_freqs.weight as convert_hf_to_gguf writes for Llama 3.1
	QKVBias, QKNorm bool
	Type            gguf.Type                   // of the 2-D weights
	Quant           func(name string) gguf.Type // per-tensor type instead of Type
	Seed            uint64
}

func shapeSpecs() []shapeSpec {
	return []shapeSpec{
		{Name: "llama-hd80-mha-ffn200-untied", Arch: "llama", Dim: 320, FFN: 200, Heads: 4, KVHeads: 4,
			Vocab: 301, Type: gguf.TypeF32, Seed: 101},
		{Name: "llama-hd96-gqa3-keylen-tied", Arch: "llama", Dim: 192, FFN: 333, Heads: 6, KVHeads: 2, HD: 96,
			Vocab: 265, Tied: true, RopeBase: 500000, Type: gguf.TypeF32, Seed: 102},
		{Name: "llama-hd128-mqa8-llama3", Arch: "llama", Dim: 256, FFN: 300, Heads: 8, KVHeads: 1, HD: 128,
			Vocab: 299, Tied: true, RopeBase: 500000, Llama3Freqs: true, Type: gguf.TypeF32, Seed: 103},
		{Name: "llama-hd64-gqa8-keylen", Arch: "llama", Dim: 256, FFN: 300, Heads: 16, KVHeads: 2, HD: 64,
			Vocab: 264, Type: gguf.TypeF32, Seed: 104},
		{Name: "llama-hd256-mqa-linear", Arch: "llama", Dim: 512, FFN: 700, Heads: 2, KVHeads: 1,
			Vocab: 277, RopeBase: 500000, Scaling: "linear", Factor: 2, Type: gguf.TypeF32, Seed: 105},
		{Name: "llama-hd256-keylen-dim128", Arch: "llama", Dim: 128, FFN: 96, Heads: 4, KVHeads: 2, HD: 256,
			Vocab: 283, Tied: true, Type: gguf.TypeF32, Seed: 106},
		{Name: "qwen2-hd128-gqa3", Arch: "qwen2", Dim: 384, FFN: 500, Heads: 3, KVHeads: 1,
			Vocab: 301, Tied: true, RopeBase: 1000000, QKVBias: true, Type: gguf.TypeF32, Seed: 107},
		{Name: "qwen3-hd128-keylen-untied", Arch: "qwen3", Dim: 256, FFN: 416, Heads: 4, KVHeads: 2, HD: 128,
			Vocab: 269, RopeBase: 1000000, QKNorm: true, Type: gguf.TypeF32, Seed: 108},
		{Name: "qwen3-hd80-mqa-linear", Arch: "qwen3", Dim: 200, FFN: 150, Heads: 5, KVHeads: 1, HD: 80,
			Vocab: 271, Tied: true, RopeBase: 1000000, Scaling: "linear", Factor: 4, QKNorm: true, Type: gguf.TypeF32, Seed: 109},
		{Name: "llama-hd80-mqa-q8_0", Arch: "llama", Dim: 160, FFN: 224, Heads: 2, KVHeads: 1,
			Vocab: 301, Type: gguf.TypeQ8_0, Seed: 110},
		{Name: "llama-hd96-gqa3-q4_0", Arch: "llama", Dim: 288, FFN: 352, Heads: 3, KVHeads: 1,
			Vocab: 265, Tied: true, Type: gguf.TypeQ4_0, Seed: 111},
		{Name: "llama-hd128-mqa-llama3-q4_k", Arch: "llama", Dim: 256, FFN: 512, Heads: 2, KVHeads: 1,
			Vocab: 301, RopeBase: 500000, Llama3Freqs: true, Type: gguf.TypeQ4_K, Seed: 112},
		{Name: "qwen3-hd256-mqa-q6_k", Arch: "qwen3", Dim: 512, FFN: 768, Heads: 2, KVHeads: 1, HD: 256,
			Vocab: 283, RopeBase: 1000000, QKNorm: true, Type: gguf.TypeQ6_K, Seed: 113},
		{Name: "llama-bf16-ffn200", Arch: "llama", Dim: 320, FFN: 200, Heads: 4, KVHeads: 2,
			Vocab: 301, Type: gguf.TypeBF16, Seed: 201},
		{Name: "qwen3-hd80-mqa-f16", Arch: "qwen3", Dim: 200, FFN: 150, Heads: 5, KVHeads: 1, HD: 80,
			Vocab: 271, QKNorm: true, Type: gguf.TypeF16, Seed: 202},
		{Name: "llama-hd128-mqa-q5_k", Arch: "llama", Dim: 256, FFN: 512, Heads: 2, KVHeads: 1,
			Vocab: 301, Type: gguf.TypeQ5_K, Seed: 203},
		// (Not Q4_1 or Q5_1: this app widens them to float32 at load, while
		// llama.cpp multiplies them with Q8_1 activations; on random
		// weights at this shape the ids parted away from a near tie, at
		// steps 15 and 12. A kernel in llama.cpp's order, pure Go, agreed
		// to 1e-7 but decoded bench110M Q4_1 at 7 tok/s against 29-51
		// widened, so it waits for its assembly: BENCHMARKS.md.)
		{Name: "qwen2-hd96-gqa3-q5_0", Arch: "qwen2", Dim: 288, FFN: 352, Heads: 3, KVHeads: 1,
			Vocab: 301, QKVBias: true, Type: gguf.TypeQ5_0, Seed: 208},
		// Qwen2.5-0.5B's 14 heads over 2 KV heads (GQA 7) and SmolLM2's 9
		// over 3, narrower; a Q4_K_M llama with an untied Q6_K output and
		// a Q4_K embedding as llama-quantize writes them.
		{Name: "qwen2-hd64-gqa7-q8_0", Arch: "qwen2", Dim: 896, FFN: 608, Heads: 14, KVHeads: 2,
			Vocab: 301, Tied: true, RopeBase: 1000000, QKVBias: true, Type: gguf.TypeQ8_0, Seed: 115},
		{Name: "llama-hd64-gqa3-h9", Arch: "llama", Dim: 576, FFN: 250, Heads: 9, KVHeads: 3,
			Vocab: 277, Tied: true, RopeBase: 100000, Type: gguf.TypeF32, Seed: 116},
		{Name: "llama-untied-q4_k_m", Arch: "llama", Dim: 256, FFN: 768, Heads: 4, KVHeads: 2,
			Vocab: 299, RopeBase: 500000, Quant: q4KMUntied, Seed: 117},
		// (Not qwen2 with key_length apart from dim/heads: llama.cpp
		// makes qwen2's attn_q dim×dim and does not load such a file.)
		{Name: "qwen2-hd128-gqa4-q4_k_m", Arch: "qwen2", Dim: 512, FFN: 768, Heads: 4, KVHeads: 1,
			Vocab: 264, Tied: true, RopeBase: 1000000, QKVBias: true, Quant: q4KM, Seed: 114},
	}
}

// q4KMUntied is llama-quantize's Q4_K_M for an untied model: Q6_K output,
// attn_v and ffn_down, Q4_K elsewhere including the embedding.
func q4KMUntied(name string) gguf.Type {
	if name == "output.weight" || strings.HasSuffix(name, "attn_v.weight") || strings.HasSuffix(name, "ffn_down.weight") {
		return gguf.TypeQ6_K
	}
	return gguf.TypeQ4_K
}

// shapeVocabKV is the synthetic vocabulary (vocabKV) with ordinary filler
// tokens up to n.
func shapeVocabKV(n int) []gguf.KV {
	kv := vocabKV()
	toks := kv[1].Value.(gguf.ArrayValue).Data.([]string)
	types := kv[3].Value.(gguf.ArrayValue).Data.([]int32)
	for i := len(toks); i < n; i++ {
		toks = append(toks, fmt.Sprintf("▁x%d", i))
		types = append(types, 1)
	}
	scores := make([]float32, len(toks))
	for i := range scores {
		scores[i] = -float32(i)
	}
	kv[1].Value = gguf.ArrayValue{Elem: gguf.String, Data: toks}
	kv[2].Value = gguf.ArrayValue{Elem: gguf.Float32, Data: scores}
	kv[3].Value = gguf.ArrayValue{Elem: gguf.Int32, Data: types}
	return kv
}

func writeShape(s shapeSpec) ([]byte, error) {
	hd := s.HD
	if hd == 0 {
		hd = s.Dim / s.Heads
	}
	a := s.Arch + "."
	u32 := func(k string, v int) gguf.KV { return gguf.KV{Key: a + k, Type: gguf.Uint32, Value: uint32(v)} }
	f32 := func(k string, v float32) gguf.KV { return gguf.KV{Key: a + k, Type: gguf.Float32, Value: v} }
	meta := []gguf.KV{
		{Key: "general.architecture", Type: gguf.String, Value: s.Arch},
		{Key: "general.name", Type: gguf.String, Value: "random-weight test model"},
		u32("context_length", 512), u32("embedding_length", s.Dim), u32("block_count", 2),
		u32("feed_forward_length", s.FFN), u32("attention.head_count", s.Heads), u32("attention.head_count_kv", s.KVHeads),
		f32("attention.layer_norm_rms_epsilon", 1e-6), u32("rope.dimension_count", hd),
	}
	if s.HD != 0 {
		meta = append(meta, u32("attention.key_length", hd), u32("attention.value_length", hd))
	}
	if s.RopeBase != 0 {
		meta = append(meta, f32("rope.freq_base", s.RopeBase))
	}
	if s.Scaling != "" {
		meta = append(meta, gguf.KV{Key: a + "rope.scaling.type", Type: gguf.String, Value: s.Scaling}, f32("rope.scaling.factor", s.Factor))
	}
	meta = append(meta, shapeVocabKV(s.Vocab)...)
	var ts []gguf.WriteTensor
	// Standard deviations of order 1.6/sqrt(fan-in), as randmodel's 0.2
	// at dim 64, so that the logits spread about as much at every width.
	mat := func(name string, cols, rows int) {
		typ := s.Type
		if s.Quant != nil {
			typ = s.Quant(name)
		}
		std := float32(1.6 / math.Sqrt(float64(cols)))
		ts = append(ts, gguf.WriteTensor{Name: name, Dims: []int64{int64(cols), int64(rows)}, Type: typ,
			Data: gaussian(s.Seed, name, cols*rows, std)})
	}
	vec := func(name string, n int, mean, std float32) {
		v := gaussian(s.Seed, name, n, std)
		for i := range v {
			v[i] += mean
		}
		ts = append(ts, gguf.WriteTensor{Name: name, Dims: []int64{int64(n)}, Type: gguf.TypeF32, Data: v})
	}
	qDim, kvDim := s.Heads*hd, s.KVHeads*hd
	mat("token_embd.weight", s.Dim, s.Vocab)
	vec("output_norm.weight", s.Dim, 1, 0.2)
	if !s.Tied {
		mat("output.weight", s.Dim, s.Vocab)
	}
	if s.Llama3Freqs {
		ts = append(ts, gguf.WriteTensor{Name: "rope_freqs.weight", Dims: []int64{int64(hd / 2)}, Type: gguf.TypeF32,
			Data: nn.Llama3Factors(s.RopeBase, hd, 8, 1, 4, 64)})
	}
	for l := range 2 {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", s.Dim, 1, 0.2)
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
		mat(p+"attn_output.weight", qDim, s.Dim)
		vec(p+"ffn_norm.weight", s.Dim, 1, 0.2)
		mat(p+"ffn_gate.weight", s.Dim, s.FFN)
		mat(p+"ffn_up.weight", s.Dim, s.FFN)
		mat(p+"ffn_down.weight", s.FFN, s.Dim)
	}
	var b bytes.Buffer
	err := gguf.Write(&b, meta, ts)
	return b.Bytes(), err
}

// shapePrompt is BOS and 7 ordinary ids of the synthetic vocabulary.
var shapePrompt = []int{1, 260, 5, 99, 263, 42, 7, 200}

// TestShapesLlamaCpp (CHAT_LLAMACPP=1) writes each shapeSpecs model and
// compares this app's greedy ids for shapePrompt with llama.cpp's on the
// same file (scripts/llamacpp/check.mjs: CPU, one thread, F32 KV cache);
// they may part only at a near tie, a top-2 log-prob gap below 0.05 in
// both engines. The F32, F16, BF16 and Q8_0 models' top-2 gaps agree with
// llama.cpp's to about 1e-5 at every step; the block-quantized ones mostly
// too, but by up to 5e-2 at some steps (an activation within float noise of a Q8_0 or Q8_K
// rounding boundary: llama.cpp's own prefill and decode of a Q4_K model of
// these sizes differ that much), with the ids still equal.
func TestShapesLlamaCpp(t *testing.T) {
	testmodels.NeedLlamaCpp(t)
	const nGen = 24
	for _, s := range shapeSpecs() {
		t.Run(s.Name, func(t *testing.T) {
			data, err := writeShape(s)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), s.Name+".gguf")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			res := testmodels.LlamaCpp(t, testmodels.LlamaCppRequest{Model: path, Prompts: [][]int{shapePrompt}, NGen: nGen})
			m := loadT(t, path)
			st := kvcache.NewState(m)
			logits, err := st.Forward(shapePrompt, 1)
			if err != nil {
				t.Fatal(err)
			}
			want, top2 := res.Greedy[0], res.Top2[0]
			if len(want) != nGen {
				t.Fatalf("llama.cpp gave %d ids, want %d", len(want), nGen)
			}
			var got []int
			var worst float64
			for i, w := range want {
				lp := logProbs(logits)
				id := argmax(logits)
				got = append(got, id)
				gap := topGap(lp)
				ll := top2[i][0][1] - top2[i][1][1]
				if int(top2[i][0][0]) == id {
					worst = max(worst, math.Abs(gap-ll))
				}
				if id != w {
					if gap < nearTieGap && ll < nearTieGap {
						t.Logf("parts from llama.cpp at step %d, a near tie (top-2 gap %.4f here, %.4f in llama.cpp)", i, gap, ll)
						return
					}
					t.Fatalf("step %d: greedy id %d, llama.cpp %d (top-2 gap %.4f here, %.4f in llama.cpp)\n got %v\nwant %v",
						i, id, w, gap, ll, got, want)
				}
				if logits, err = st.Forward([]int{id}, 1); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%d greedy ids equal to llama.cpp's; top-2 gaps within %.2g", nGen, worst)
		})
	}
}

// nearTieGap is the top-2 log-prob gap below which two engines' float
// sums in other orders may pick differently (models/convert's nearTie).
const nearTieGap = 0.05
