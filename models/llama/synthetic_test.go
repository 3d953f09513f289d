package llama

import (
	"chat/models/kvcache"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"chat/models"
	"chat/models/gguf"
)

// tiny is the shape of the synthetic models: GQA (4 heads on 2 KV heads)
// and rope on half of each head, so both paths are exercised.
var tiny = Config{Dim: 64, Layers: 2, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 16, RopeDim: 8, RopeBase: 10000, Eps: 1e-5, Context: 80}

func vocabKV() []gguf.KV {
	toks := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	for b := 0; b < 256; b++ {
		toks = append(toks, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	for _, w := range []string{"▁", "▁a", "▁b", "ab", "▁ab"} {
		toks = append(toks, w)
		types = append(types, 1)
	}
	scores := make([]float32, len(toks))
	for i := range scores {
		scores[i] = -float32(i)
	}
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: toks}},
		{Key: "tokenizer.ggml.scores", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Float32, Data: scores}},
		{Key: "tokenizer.ggml.token_type", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Int32, Data: types}},
		{Key: "tokenizer.ggml.bos_token_id", Type: gguf.Uint32, Value: uint32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Type: gguf.Uint32, Value: uint32(2)},
	}
}

// writeTiny writes a random llama GGUF with 2-D weights of type wt; tied
// leaves out output.weight. drop removes a tensor, arch overrides the
// architecture, to test the errors.
func writeTiny(t *testing.T, wt gguf.Type, tied bool, arch, drop string) string {
	t.Helper()
	return writeTinyCtx(t, wt, tied, arch, drop, tiny.Context)
}

// writeTinyCtx is writeTiny with context_length ctx.
func writeTinyCtx(t *testing.T, wt gguf.Type, tied bool, arch, drop string, ctx int) string {
	t.Helper()
	c := tiny
	c.Context = ctx
	r := rand.New(rand.NewPCG(42, uint64(wt)))
	vocab := 259 + 5
	u32 := func(k string, v int) gguf.KV { return gguf.KV{Key: "llama." + k, Type: gguf.Uint32, Value: uint32(v)} }
	meta := []gguf.KV{
		{Key: "general.architecture", Type: gguf.String, Value: arch},
		{Key: "general.name", Type: gguf.String, Value: "tiny"},
		u32("embedding_length", c.Dim), u32("block_count", c.Layers), u32("feed_forward_length", c.FFN),
		u32("attention.head_count", c.Heads), u32("attention.head_count_kv", c.KVHeads),
		u32("rope.dimension_count", c.RopeDim), u32("context_length", c.Context),
		{Key: "llama.attention.layer_norm_rms_epsilon", Type: gguf.Float32, Value: c.Eps},
		{Key: "llama.rope.freq_base", Type: gguf.Float32, Value: c.RopeBase},
	}
	meta = append(meta, vocabKV()...)
	var ts []gguf.WriteTensor
	add := func(name string, typ gguf.Type, std float64, dims ...int64) {
		if name == drop {
			return
		}
		n := int64(1)
		for _, d := range dims {
			n *= d
		}
		x := make([]float32, n)
		for i := range x {
			if std == 0 {
				x[i] = 1 + float32(r.NormFloat64()*0.1)
			} else {
				x[i] = float32(r.NormFloat64() * std)
			}
		}
		ts = append(ts, gguf.WriteTensor{Name: name, Dims: dims, Type: typ, Data: x})
	}
	d, q, kv, f := int64(c.Dim), int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim), int64(c.FFN)
	add("token_embd.weight", wt, 0.5, d, int64(vocab))
	add("output_norm.weight", gguf.TypeF32, 0, d)
	if !tied {
		add("output.weight", wt, 0.2, d, int64(vocab))
	}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", gguf.TypeF32, 0, d)
		add(p+"attn_q.weight", wt, 0.3, d, q)
		add(p+"attn_k.weight", wt, 0.3, d, kv)
		add(p+"attn_v.weight", wt, 0.2, d, kv)
		add(p+"attn_output.weight", wt, 0.1, q, d)
		add(p+"ffn_norm.weight", gguf.TypeF32, 0, d)
		add(p+"ffn_gate.weight", wt, 0.2, d, f)
		add(p+"ffn_up.weight", wt, 0.2, d, f)
		add(p+"ffn_down.weight", wt, 0.1, f, d)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("tiny-%s.gguf", wt))
	fd, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if err := gguf.Write(fd, meta, ts); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSyntheticCachedVsUncached(t *testing.T) {
	for _, wt := range []gguf.Type{gguf.TypeF32, gguf.TypeQ8_0} {
		t.Run(wt.String(), func(t *testing.T) {
			m, err := Load(writeTiny(t, wt, wt == gguf.TypeQ8_0, "llama", ""))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			info := m.Info()
			if info.Quant != wt.String() || info.Arch != "llama" || info.Format != "gguf" || info.Name != "tiny" ||
				info.ContextLength != tiny.Context || info.VocabSize != 264 || info.KVHeads != 2 || info.Window != models.WindowHalf {
				t.Errorf("info %+v", info)
			}
			r := rand.New(rand.NewPCG(1, 1))
			seq := make([]int, 70) // more than maxBatch: the batch runs in chunks
			for i := range seq {
				seq[i] = r.IntN(info.VocabSize)
			}
			V := info.VocabSize
			// One batch with every row, against one token at a time, against
			// a fresh state per prefix (no cache reuse).
			batch, err := kvcache.NewState(m).Forward(seq, len(seq))
			if err != nil {
				t.Fatal(err)
			}
			batch = append([]float32(nil), batch...)
			inc := kvcache.NewState(m)
			var worst float64
			for i, tok := range seq {
				step, err := inc.Forward([]int{tok}, 1)
				if err != nil {
					t.Fatal(err)
				}
				fresh, err := kvcache.NewState(m).Forward(seq[:i+1], 1)
				if err != nil {
					t.Fatal(err)
				}
				for j := 0; j < V; j++ {
					worst = max(worst, math.Abs(float64(step[j]-fresh[j])), math.Abs(float64(step[j]-batch[i*V+j])))
					if math.IsNaN(float64(step[j])) {
						t.Fatal("NaN logit")
					}
				}
			}
			if worst > 1e-4 {
				t.Errorf("cached and uncached logits differ by %g", worst)
			}
			// Rollback: truncating and re-feeding gives the same logits.
			inc.Truncate(10)
			if inc.Len() != 10 {
				t.Fatalf("Len after Truncate = %d", inc.Len())
			}
			again, _ := inc.Forward(seq[10:], 1)
			for j := 0; j < V; j++ {
				if d := math.Abs(float64(again[j] - batch[(len(seq)-1)*V+j])); d > 1e-4 {
					t.Fatalf("after Truncate logit %d differs by %g", j, d)
				}
			}
		})
	}
}

// TestLongTrainedContext: a model trained for more than MaxContext
// positions gets the default window, says how long it was trained for, and
// runs past the default window when a cache that long is given (the rope
// tables cover the trained context).
func TestLongTrainedContext(t *testing.T) {
	train := MaxContext + 200
	m, err := Load(writeTinyCtx(t, gguf.TypeF32, true, "llama", "", train))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if info := m.Info(); info.ContextLength != MaxContext || info.TrainContext != train {
		t.Fatalf("context %d, trained %d; want %d, %d", info.ContextLength, info.TrainContext, MaxContext, train)
	}
	n := MaxContext + 40
	pool, err := kvcache.NewPool(kvcache.LayoutOf(m, kvcache.F32, kvcache.F32), kvcache.DefaultBlockSize, train/kvcache.DefaultBlockSize+2)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	seq := make([]int, n)
	for i := range seq {
		seq[i] = r.IntN(m.Info().VocabSize)
	}
	st := models.NewState(m, pool.NewSeq(train))
	batch, err := st.Forward(seq, 1)
	if err != nil {
		t.Fatal(err)
	}
	batch = append([]float32(nil), batch...)
	// The last two positions again, one at a time.
	st.Truncate(n - 2)
	if _, err := st.Forward(seq[n-2:n-1], 1); err != nil {
		t.Fatal(err)
	}
	step, err := st.Forward(seq[n-1:], 1)
	if err != nil {
		t.Fatal(err)
	}
	for j := range step {
		if d := math.Abs(float64(step[j] - batch[j])); !(d <= 1e-4) {
			t.Fatalf("logit %d at position %d: %v one at a time, %v in the batch", j, n-1, step[j], batch[j])
		}
	}
}

func TestDecodeAllocatesNothing(t *testing.T) {
	for _, wt := range []gguf.Type{gguf.TypeF32, gguf.TypeQ8_0} {
		m, err := Load(writeTiny(t, wt, false, "llama", ""))
		if err != nil {
			t.Fatal(err)
		}
		s := kvcache.NewState(m)
		if _, err := s.Forward([]int{1, 260, 5, 7}, 1); err != nil {
			t.Fatal(err)
		}
		tok := []int{42}
		allocs := testing.AllocsPerRun(20, func() {
			s.Truncate(4)
			if _, err := s.Forward(tok, 1); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: decode step allocates %v times", wt, allocs)
		}
		m.Close()
	}
}

// TestQ8MatchesDequantized runs a Q8_0 model (integer products on Q8_0
// activations) against the same weights dequantised into an F32 file: the
// logits differ only by the activation rounding.
func TestQ8MatchesDequantized(t *testing.T) {
	q8 := writeTiny(t, gguf.TypeQ8_0, false, "llama", "")
	f, err := gguf.Open(q8)
	if err != nil {
		t.Fatal(err)
	}
	var ts []gguf.WriteTensor
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		w, err := f.TensorFloat32(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: gguf.TypeF32, Data: w})
	}
	f32 := filepath.Join(t.TempDir(), "deq.gguf")
	fd, _ := os.Create(f32)
	if err := gguf.Write(fd, f.KV, ts); err != nil {
		t.Fatal(err)
	}
	fd.Close()
	f.Close()
	a, err := Load(q8)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Load(f32)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Info().WeightBytes*3 > b.Info().WeightBytes {
		t.Errorf("q8_0 reads %d bytes a token, f32 %d", a.Info().WeightBytes, b.Info().WeightBytes)
	}
	seq := []int{1, 261, 5, 99, 263, 42, 7, 200}
	la, err := kvcache.NewState(a).Forward(seq, len(seq))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := kvcache.NewState(b).Forward(seq, len(seq))
	if err != nil {
		t.Fatal(err)
	}
	var worst, scale float64
	for i := range la {
		worst = max(worst, math.Abs(float64(la[i]-lb[i])))
		scale = max(scale, math.Abs(float64(lb[i])))
	}
	if worst > 0.05*scale { // activation rounding, amplified by random weights
		t.Errorf("q8_0 and dequantised logits differ by %g (largest logit %g)", worst, scale)
	}
	t.Logf("q8_0 vs dequantised f32: max |diff| %.3g, largest logit %.3g", worst, scale)
}

func TestForwardErrors(t *testing.T) {
	m, err := Load(writeTiny(t, gguf.TypeF32, false, "llama", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := kvcache.NewState(m)
	if _, err := s.Forward(nil, 1); err == nil {
		t.Error("empty batch accepted")
	}
	if _, err := s.Forward([]int{1, 264}, 1); err == nil || s.Len() != 0 {
		t.Errorf("bad id: %v, len %d", err, s.Len())
	}
	if _, err := s.Forward([]int{-1}, 1); err == nil {
		t.Error("negative id accepted")
	}
	if _, err := s.Forward(make([]int, s.Cap()+1), 1); err == nil || s.Len() != 0 {
		t.Error("overflow accepted")
	}
	if out, err := s.Forward(make([]int, s.Cap()), 99); err != nil || len(out) != s.Cap()*264 {
		t.Errorf("full cache: %v, %d logits", err, len(out))
	}
	if _, err := s.Forward([]int{1}, 1); err == nil {
		t.Error("forward past the cache accepted")
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		arch, drop, want string
	}{
		{"gpt2", "", `unsupported architecture "gpt2"`},
		{"llama", "blk.1.ffn_up.weight", "blk.1.ffn_up.weight missing"},
		{"llama", "token_embd.weight", "token_embd.weight missing"},
	}
	for _, c := range cases {
		_, err := Load(writeTiny(t, gguf.TypeF32, false, c.arch, c.drop))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.gguf")); err == nil {
		t.Error("missing file loaded")
	}
}

// TestGPT2Tokenizer swaps in a byte-level BPE vocabulary of the same size,
// as Llama-3 GGUFs carry.
func TestGPT2Tokenizer(t *testing.T) {
	path := writeTiny(t, gguf.TypeF32, false, "llama", "")
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var meta []gguf.KV
	for _, kv := range f.KV {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			meta = append(meta, kv)
		}
	}
	// 256 byte runes, then words, 264 tokens as token_embd has.
	var toks []string
	for b := 0; b < 256; b++ {
		toks = append(toks, string(byteRuneForTest(b)))
	}
	toks = append(toks, "Ġa", "ab", "Ġab", "<|bos|>", "<|eot|>", "x1", "x2", "x3")
	types := make([]int32, len(toks))
	for i := range types {
		types[i] = 1
	}
	types[259], types[260] = 3, 3
	meta = append(meta,
		gguf.KV{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "gpt2"},
		gguf.KV{Key: "tokenizer.ggml.pre", Type: gguf.String, Value: "llama-bpe"},
		gguf.KV{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: toks}},
		gguf.KV{Key: "tokenizer.ggml.token_type", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Int32, Data: types}},
		gguf.KV{Key: "tokenizer.ggml.merges", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: []string{"Ġ a", "a b", "Ġ ab"}}},
		gguf.KV{Key: "tokenizer.ggml.bos_token_id", Type: gguf.Uint32, Value: uint32(259)},
		gguf.KV{Key: "tokenizer.ggml.eos_token_id", Type: gguf.Uint32, Value: uint32(260)},
	)
	var ts []gguf.WriteTensor
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		w, err := f.TensorFloat32(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: w})
	}
	out := filepath.Join(t.TempDir(), "tiny-bpe.gguf")
	fd, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(fd, meta, ts); err != nil {
		t.Fatal(err)
	}
	fd.Close()
	f.Close()
	m, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok := m.Tokenizer()
	ids := tok.Encode(" ab a")
	if got := tok.Decode(ids); got != " ab a" || len(ids) != 2 {
		t.Errorf("Encode = %v, Decode = %q", ids, got)
	}
	if tok.BOS() != 259 || tok.EOT() != 260 || m.StripsLeadingSpace() {
		t.Errorf("bos %d eot %d", tok.BOS(), tok.EOT())
	}
	if _, err := kvcache.NewState(m).Forward(append([]int{tok.BOS()}, ids...), 1); err != nil {
		t.Fatal(err)
	}
}

// byteRuneForTest is GPT-2's byte alphabet.
func byteRuneForTest(b int) rune {
	if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
		return rune(b)
	}
	n := 0
	for c := 0; c < b; c++ {
		if !((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF)) {
			n++
		}
	}
	return rune(256 + n)
}

func TestTokenizerFromModel(t *testing.T) {
	m, err := Load(writeTiny(t, gguf.TypeQ8_0, true, "llama", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok := m.Tokenizer()
	ids := tok.Encode("ab a")
	if got := tok.Decode(ids); got != "ab a" {
		t.Errorf("round trip %v -> %q", ids, got)
	}
	if tok.BOS() != 1 || tok.EOT() != 2 || tok.Size() != 264 {
		t.Errorf("bos %d eot %d size %d", tok.BOS(), tok.EOT(), tok.Size())
	}
}
