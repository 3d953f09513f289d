package llama

import (
	"bytes"
	"chat/models/kernels"
	"chat/models/kvcache"
	"chat/models/testmodels"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"chat/models"
	"chat/models/gguf"
	"chat/models/llama/randmodel"
	"chat/models/modeltest"
	"chat/models/nn"
)

// archSpec is a small random model of each family: randmodel's shapes,
// written with the synthetic SPM vocabulary so no shared file is needed.
func archSpec(name string, typ gguf.Type) randmodel.Spec {
	s := randmodel.Spec{
		Name: name, Dim: 64, Layers: 2, FFN: 96, Heads: 4, KVHeads: 2, Context: 96, Eps: 1e-5,
		Type: typ, Seed: 7, Std: 0.3,
	}
	switch name {
	case "llama":
		s.Arch = "llama"
	case "llama3":
		// Original context 64 puts pairs in all three Llama 3.1 bands.
		s.Arch, s.KVHeads, s.RopeBase, s.Llama3Freqs = "llama", 1, 500000, true
		s.Llama3 = randmodel.Llama3Rope{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 64}
	case "qwen2":
		s.Arch, s.Tied, s.QKVBias, s.RopeBase, s.Eps = "qwen2", true, true, 1000000, 1e-6
	case "qwen3":
		s.Arch, s.HeadDim, s.QKNorm, s.RopeBase, s.Eps = "qwen3", 32, true, 1000000, 1e-6
	case "granite":
		// Granite 3's scales.
		s.Arch, s.Tied, s.RopeBase = "granite", true, 10000000
		s.EmbeddingScale, s.ResidualScale, s.AttentionScale, s.LogitScale = 12, 0.22, 0.0078125, 8
	case "smollm3":
		// Layer 3 goes without rope.
		s.Arch, s.Layers, s.Tied, s.RopeBase = "smollm3", 4, true, 5000000
	case "olmo2":
		s.Arch, s.PostNorms, s.RopeBase, s.Eps = "olmo2", true, 500000, 1e-6
	case "qwen3moe":
		// 8 experts, 3 used (so the outputs' order of addition matters),
		// 32 wide from expert_feed_forward_length.
		s.Arch, s.HeadDim, s.QKNorm, s.RopeBase, s.Eps = "qwen3moe", 32, true, 1000000, 1e-6
		s.Experts, s.ExpertsUsed, s.ExpertFFN = 8, 3, 32
	case "granitemoe":
		s.Arch, s.Tied, s.RopeBase = "granitemoe", true, 10000000
		s.EmbeddingScale, s.ResidualScale, s.AttentionScale, s.LogitScale = 12, 0.22, 0.0078125, 8
		s.FFN, s.Experts, s.ExpertsUsed = 32, 6, 2
	case "olmoe":
		// llama.cpp's OLMoE has no GQA (its K norm is n_embd wide).
		s.Arch, s.KVHeads, s.RowQKNorm, s.RopeBase, s.Eps = "olmoe", 4, true, 10000, 1e-5
		s.FFN, s.Experts, s.ExpertsUsed = 32, 4, 2
	default:
		panic("archSpec " + name)
	}
	return s
}

// synthVocab is the synthetic SPM vocabulary as a parsed GGUF, the
// tokenizer randmodel copies.
func synthVocab(t testing.TB) *gguf.File {
	t.Helper()
	var b bytes.Buffer
	if err := gguf.Write(&b, vocabKV(), nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// writeSpec writes s into a temporary file; edit, when set, may change the
// metadata and tensors first (as float32; Q8_0 tensors are re-encoded).
func writeSpec(t testing.TB, s randmodel.Spec, edit func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor)) string {
	t.Helper()
	var b bytes.Buffer
	if err := randmodel.Write(&b, s, synthVocab(t)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), s.Name+".gguf")
	if edit == nil {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	f, err := gguf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	ts := make([]gguf.WriteTensor, len(f.Tensors))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		w, err := f.TensorFloat32(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts[i] = gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: append([]float32(nil), w...)}
	}
	meta, ts := edit(append([]gguf.KV(nil), f.KV...), ts)
	var out bytes.Buffer
	if err := gguf.Write(&out, meta, ts); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func loadT(t testing.TB, path string) *Model {
	t.Helper()
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func tensorByName(ts []gguf.WriteTensor, name string) *gguf.WriteTensor {
	for i := range ts {
		if ts[i].Name == name {
			return &ts[i]
		}
	}
	return nil
}

func setKV(meta []gguf.KV, kvs ...gguf.KV) []gguf.KV {
	for _, kv := range kvs {
		found := false
		for i := range meta {
			if meta[i].Key == kv.Key {
				meta[i], found = kv, true
			}
		}
		if !found {
			meta = append(meta, kv)
		}
	}
	return meta
}

// logitsOf runs seq as one batch and returns a copy of every row.
func logitsOf(t testing.TB, m *Model, seq []int) []float32 {
	t.Helper()
	out, err := kvcache.NewState(m).Forward(seq, len(seq))
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), out...)
}

func maxDiff(a, b []float32) float64 {
	var worst float64
	for i := range a {
		worst = max(worst, math.Abs(float64(a[i]-b[i])))
	}
	return worst
}

func randSeq(n, vocab int) []int {
	r := rand.New(rand.NewPCG(3, 4))
	seq := make([]int, n)
	for i := range seq {
		seq[i] = r.IntN(vocab)
	}
	return seq
}

// checkCached compares one token at a time through the cache with a batch
// of all rows and with a fresh state per prefix.
func checkCached(t *testing.T, m *Model, n int) {
	t.Helper()
	V := m.Info().VocabSize
	seq := randSeq(n, V)
	batch := logitsOf(t, m, seq)
	inc := kvcache.NewState(m)
	var worst float64
	for i, tok := range seq {
		step, err := inc.Forward([]int{tok}, 1)
		if err != nil {
			t.Fatal(err)
		}
		worst = max(worst, maxDiff(step, batch[i*V:(i+1)*V]))
		if i%7 == 0 || i == n-1 {
			fresh, err := kvcache.NewState(m).Forward(seq[:i+1], 1)
			if err != nil {
				t.Fatal(err)
			}
			worst = max(worst, maxDiff(step, fresh))
		}
		for _, v := range step {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("position %d: logit %v", i, v)
			}
		}
	}
	// Absolute 1e-4 when the prefill sums in MatVec's order; with the GEMM
	// (a prefill of nn.PrefillMinTokens+ tokens, kernels.GEMM) its tolerance, relative to
	// the largest logit: Gemma's GELU table turns an ulp into a 1e-3 step.
	var scale float64 = 1
	for _, v := range batch {
		scale = max(scale, math.Abs(float64(v)))
	}
	tol := 1e-4
	if kernels.GEMM() && n >= nn.PrefillMinTokens {
		tol = max(tol, kernels.GEMMTolerance*scale)
	}
	t.Logf("%d tokens: cached and uncached logits within %.2g (%.2g of the largest logit)", n, worst, worst/scale)
	if worst > tol {
		t.Errorf("cached and uncached logits differ by %g", worst)
	}
}

// archCases are the families plus the variants that only metadata or
// tensor layout set apart: YaRN, a fused QKV, and the Gemma generations
// (with sliding windows of 8 positions).
var archCases = []struct {
	name, spec string
	edit       func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor)
}{
	{"llama", "llama", nil},
	{"llama3", "llama3", nil},
	{"qwen2", "qwen2", nil},
	{"qwen3", "qwen3", nil},
	{"qwen2-yarn", "qwen2", yarnEdit},
	{"llama-fused-qkv", "llama", fuseQKV},
	{"gemma", "gemma-f32", nil},
	{"gemma2", "gemma2-f32", nil},
	{"gemma3", "gemma3-f32", nil},
	{"phi3", "phi3-f32", nil},
	{"phi3-longrope", "phi3-longrope-f32", nil},
	{"granite", "granite", nil},
	{"smollm3", "smollm3", nil},
	{"olmo2", "olmo2", nil},
	{"qwen3moe", "qwen3moe", nil},
	{"granitemoe", "granitemoe", nil},
	{"olmoe", "olmoe", nil},
}

// writeCase writes archCases' model in weight type typ.
func writeCase(t testing.TB, spec string, typ gguf.Type, edit func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor)) string {
	t.Helper()
	for _, g := range gemmaSpecs() {
		if g.Name != spec {
			continue
		}
		g.Type = typ
		data, err := writeGemma(g)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), g.Name+".gguf")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return writeSpec(t, archSpec(spec, typ), edit)
}

func yarnEdit(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
	return setKV(meta,
		gguf.KV{Key: "qwen2.rope.scaling.type", Type: gguf.String, Value: "yarn"},
		gguf.KV{Key: "qwen2.rope.scaling.factor", Type: gguf.Float32, Value: float32(4)},
		gguf.KV{Key: "qwen2.rope.scaling.original_context_length", Type: gguf.Uint32, Value: uint32(24)},
	), ts
}

// fuseQKV replaces each layer's attn_q/k/v by one attn_qkv (rows q, k, v).
func fuseQKV(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
	var out []gguf.WriteTensor
	for _, w := range ts {
		p, ok := strings.CutSuffix(w.Name, "attn_q.weight")
		if !ok {
			if strings.HasSuffix(w.Name, "attn_k.weight") || strings.HasSuffix(w.Name, "attn_v.weight") {
				continue
			}
			out = append(out, w)
			continue
		}
		k, v := tensorByName(ts, p+"attn_k.weight"), tensorByName(ts, p+"attn_v.weight")
		data := append(append(append([]float32(nil), w.Data...), k.Data...), v.Data...)
		out = append(out, gguf.WriteTensor{Name: p + "attn_qkv.weight", Type: w.Type,
			Dims: []int64{w.Dims[0], w.Dims[1] + k.Dims[1] + v.Dims[1]}, Data: data})
	}
	return meta, out
}

func TestArchCachedVsUncached(t *testing.T) {
	for _, c := range archCases {
		for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeQ8_0} {
			t.Run(c.name+"-"+typ.String(), func(t *testing.T) {
				m := loadT(t, writeCase(t, c.spec, typ, c.edit))
				checkCached(t, m, 40)
			})
		}
	}
}

func TestArchDecodeAllocatesNothing(t *testing.T) {
	for _, c := range archCases {
		for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeQ8_0} {
			m := loadT(t, writeCase(t, c.spec, typ, c.edit))
			s := kvcache.NewState(m)
			if _, err := s.Forward([]int{1, 260, 5, 7}, 1); err != nil {
				t.Fatal(err)
			}
			tok := []int{42}
			allocs := testing.AllocsPerRun(10, func() {
				s.Truncate(4)
				if _, err := s.Forward(tok, 1); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s %s: decode step allocates %v times", c.name, typ, allocs)
			}
		}
	}
}

// TestLlama3RopeMetadata: rope.scaling.type "llama3" with its parameters
// in metadata gives the same model as the rope_freqs.weight tensor the
// converter writes.
func TestLlama3RopeMetadata(t *testing.T) {
	s := archSpec("llama3", gguf.TypeF32)
	want := logitsOf(t, loadT(t, writeSpec(t, s, nil)), randSeq(20, 264))
	meta := writeSpec(t, s, func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		var out []gguf.WriteTensor
		for _, w := range ts {
			if w.Name != "rope_freqs.weight" {
				out = append(out, w)
			}
		}
		return setKV(meta,
			gguf.KV{Key: "llama.rope.scaling.type", Type: gguf.String, Value: "llama3"},
			gguf.KV{Key: "llama.rope.scaling.factor", Type: gguf.Float32, Value: float32(8)},
			gguf.KV{Key: "llama.rope.scaling.low_freq_factor", Type: gguf.Float32, Value: float32(1)},
			gguf.KV{Key: "llama.rope.scaling.high_freq_factor", Type: gguf.Float32, Value: float32(4)},
			gguf.KV{Key: "llama.rope.scaling.original_context_length", Type: gguf.Uint32, Value: uint32(64)},
		), out
	})
	got := logitsOf(t, loadT(t, meta), randSeq(20, 264))
	if d := maxDiff(got, want); d != 0 {
		t.Errorf("llama3 rope from metadata differs from rope_freqs.weight by %g", d)
	}
	// Llama 3's factors do not depend on the window: a larger one keeps
	// the model as it is.
	for _, path := range []string{meta, writeSpec(t, s, nil)} {
		if m := loadT(t, path); m.ForWindow(4096) != models.Model(m) {
			t.Errorf("%s: a larger window rebuilt a Llama 3 model", filepath.Base(path))
		}
	}
	// Without the factors the model is a different one.
	plain := writeSpec(t, s, func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		var out []gguf.WriteTensor
		for _, w := range ts {
			if w.Name != "rope_freqs.weight" {
				out = append(out, w)
			}
		}
		return meta, out
	})
	if d := maxDiff(logitsOf(t, loadT(t, plain), randSeq(20, 264)), want); d < 1e-3 {
		t.Errorf("rope_freqs.weight changes the logits by only %g", d)
	}
}

// TestQKNormScaleInvariance: with qwen3's per-head RMSNorm of Q and K,
// scaling attn_q and attn_k leaves the logits unchanged, which it would
// not without the norms.
func TestQKNormScaleInvariance(t *testing.T) {
	s := archSpec("qwen3", gguf.TypeF32)
	seq := randSeq(20, 264)
	want := logitsOf(t, loadT(t, writeSpec(t, s, nil)), seq)
	scaled := writeSpec(t, s, func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		for i := range ts {
			if strings.HasSuffix(ts[i].Name, "attn_q.weight") || strings.HasSuffix(ts[i].Name, "attn_k.weight") {
				for j := range ts[i].Data {
					ts[i].Data[j] *= 4
				}
			}
		}
		return meta, ts
	})
	if d := maxDiff(logitsOf(t, loadT(t, scaled), seq), want); d > 1e-4 {
		t.Errorf("scaling Q and K before the q/k norms changes the logits by %g", d)
	}
	// The norm weights themselves matter.
	noNorm := writeSpec(t, s, func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		for i := range ts {
			if strings.HasSuffix(ts[i].Name, "attn_q_norm.weight") {
				for j := range ts[i].Data {
					ts[i].Data[j] = 1
				}
			}
		}
		return meta, ts
	})
	if d := maxDiff(logitsOf(t, loadT(t, noNorm), seq), want); d < 1e-3 {
		t.Errorf("attn_q_norm.weight changes the logits by only %g", d)
	}
	// qwen3 requires the norms.
	missing := writeSpec(t, s, func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		var out []gguf.WriteTensor
		for _, w := range ts {
			if w.Name != "blk.1.attn_k_norm.weight" {
				out = append(out, w)
			}
		}
		return meta, out
	})
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), "blk.1.attn_k_norm.weight missing") {
		t.Errorf("qwen3 without attn_k_norm: %v", err)
	}
}

// TestQwen2Biases: a V bias adds the same vector to every attention output
// of its head group (the weights sum to 1), so it equals an attn_output
// bias of Wo·bias; Q and K biases change the logits; qwen2 requires them.
func TestQwen2Biases(t *testing.T) {
	s := archSpec("qwen2", gguf.TypeF32)
	seq := randSeq(20, 264)
	want := logitsOf(t, loadT(t, writeSpec(t, s, nil)), seq)
	hd := s.Dim / s.Heads
	group := s.Heads / s.KVHeads
	moved := writeSpec(t, s, func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		for l := 0; l < s.Layers; l++ {
			p := fmt.Sprintf("blk.%d.", l)
			bv, wo := tensorByName(ts, p+"attn_v.bias"), tensorByName(ts, p+"attn_output.weight")
			qDim := int(wo.Dims[0])
			bo := make([]float32, s.Dim)
			for r := range bo {
				var sum float64
				for j := 0; j < qDim; j++ {
					h, e := j/hd, j%hd
					sum += float64(wo.Data[r*qDim+j]) * float64(bv.Data[(h/group)*hd+e])
				}
				bo[r] = float32(sum)
			}
			clear(bv.Data)
			ts = append(ts, gguf.WriteTensor{Name: p + "attn_output.bias", Dims: []int64{int64(s.Dim)}, Type: gguf.TypeF32, Data: bo})
		}
		return meta, ts
	})
	if d := maxDiff(logitsOf(t, loadT(t, moved), seq), want); d > 1e-4 {
		t.Errorf("V bias moved to the output bias changes the logits by %g", d)
	}
	for _, b := range []string{"attn_q.bias", "attn_k.bias"} {
		zero := writeSpec(t, s, func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			for i := range ts {
				if strings.HasSuffix(ts[i].Name, b) {
					clear(ts[i].Data)
				}
			}
			return meta, ts
		})
		if d := maxDiff(logitsOf(t, loadT(t, zero), seq), want); d < 1e-3 {
			t.Errorf("%s changes the logits by only %g", b, d)
		}
	}
	missing := writeSpec(t, s, func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		var out []gguf.WriteTensor
		for _, w := range ts {
			if w.Name != "blk.0.attn_k.bias" {
				out = append(out, w)
			}
		}
		return meta, out
	})
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), "blk.0.attn_k.bias missing") {
		t.Errorf("qwen2 without attn_k.bias: %v", err)
	}
}

// TestFusedQKV: one attn_qkv tensor gives the same model as separate ones.
func TestFusedQKV(t *testing.T) {
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeQ8_0} {
		s := archSpec("llama", typ)
		seq := randSeq(12, 264)
		want := logitsOf(t, loadT(t, writeSpec(t, s, nil)), seq)
		if d := maxDiff(logitsOf(t, loadT(t, writeSpec(t, s, fuseQKV)), seq), want); d != 0 {
			t.Errorf("%s: fused attn_qkv differs by %g", typ, d)
		}
	}
	// A fused tensor with rows missing is refused (its attn_v was sliced
	// past its end: a panic).
	short := writeSpec(t, archSpec("llama", gguf.TypeF32), func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		meta, ts = fuseQKV(meta, ts)
		w := tensorByName(ts, "blk.0.attn_qkv.weight")
		w.Dims[1] -= 8
		w.Data = w.Data[:w.Dims[0]*w.Dims[1]]
		return meta, ts
	})
	if _, err := Load(short); err == nil || !strings.Contains(err.Error(), "blk.0.attn_qkv.weight") {
		t.Errorf("attn_qkv 8 rows short: %v", err)
	}
}

func TestArchInfoAndErrors(t *testing.T) {
	for _, name := range []string{"llama", "qwen2", "qwen3"} {
		s := archSpec(name, gguf.TypeQ8_0)
		m := loadT(t, writeSpec(t, s, nil))
		info := m.Info()
		if info.Arch != s.Arch || info.Name != name || info.Quant != "q8_0" || info.Format != "gguf" ||
			info.Layers != 2 || info.Heads != 4 || info.KVHeads != 2 || info.VocabSize != 264 || info.ContextLength != 96 {
			t.Errorf("%s: info %+v", name, info)
		}
		var params int64
		for _, ti := range m.GGUF().Tensors {
			params += ti.Elements()
		}
		if info.Params != params || info.WeightBytes <= 0 || info.WeightBytes > m.GGUF().Size {
			t.Errorf("%s: params %d (tensors %d), weight bytes %d of a %d-byte file", name, info.Params, params, info.WeightBytes, m.GGUF().Size)
		}
	}
	// general.file_type names the quantization when present; a name equal
	// to the architecture gives way to the file name.
	path := writeSpec(t, archSpec("qwen3", gguf.TypeF32), func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		return setKV(meta,
			gguf.KV{Key: "general.file_type", Type: gguf.Uint32, Value: uint32(15)},
			gguf.KV{Key: "general.name", Type: gguf.String, Value: "qwen3"}), ts
	})
	if info := loadT(t, path).Info(); info.Quant != "q4_k_m" || info.Name != "qwen3" || info.Arch != "qwen3" {
		t.Errorf("file_type 15: %+v", info)
	}
	cases := []struct {
		edit func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor)
		want string
	}{
		{func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, gguf.KV{Key: "general.architecture", Type: gguf.String, Value: "mamba"}), ts
		}, `unsupported architecture "mamba" (supported: gemma, gemma2, gemma3, granite, granitemoe, llama, olmo2, olmoe, phi3, qwen2, qwen3, qwen3moe, smollm3)`},
		{func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, gguf.KV{Key: "qwen2.rope.scaling.type", Type: gguf.String, Value: "dynamic"}), ts
		}, `rope scaling "dynamic" is not supported`},
		{func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, gguf.KV{Key: "qwen2.rope.scaling.factor", Type: gguf.Float32, Value: float32(math.Inf(1))}), ts
		}, "rope scaling factor"},
		{func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, gguf.KV{Key: "qwen2.rope.scaling.type", Type: gguf.Uint32, Value: uint32(1)}), ts
		}, "rope.scaling.type is not a string"},
	}
	for _, c := range cases {
		_, err := Load(writeSpec(t, archSpec("qwen2", gguf.TypeF32), c.edit))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	bad := writeSpec(t, archSpec("llama3", gguf.TypeF32), func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		tensorByName(ts, "rope_freqs.weight").Data[3] = 0
		return meta, ts
	})
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "rope_freqs") {
		t.Errorf("zero rope factor: %v", err)
	}
}

// TestBlockQuants: Q4_0, Q4_K, Q5_K, Q6_K, Q2_K and Q3_K weights (random blocks with
// small scales) run on the block kernels straight from the file, Q5_0 as
// exact int8 blocks, F16 and BF16 on float32 with activations rounded
// the same way. Each
// model's logits stay close to the same values stored as F32 (the
// difference is the activations' rounding), it reads fewer weight bytes,
// and Quant is the dominant tensor type.
func TestBlockQuants(t *testing.T) {
	s := archSpec("qwen2", gguf.TypeF32)
	s.Dim, s.FFN, s.Heads, s.KVHeads = 256, 256, 4, 2
	r := rand.New(rand.NewPCG(9, 9))
	for _, typ := range []gguf.Type{gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeQ5_0, gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeF16, gguf.TypeBF16} {
		t.Run(typ.String(), func(t *testing.T) {
			var deq []gguf.WriteTensor
			quant := writeSpec(t, s, func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
				meta = slices.DeleteFunc(meta, func(kv gguf.KV) bool { return kv.Key == "general.file_type" })
				for i := range ts {
					w := &ts[i]
					if len(w.Dims) != 2 {
						continue
					}
					if typ == gguf.TypeF16 {
						w.Type = typ
						for j, v := range w.Data {
							w.Data[j] = gguf.F16ToF32(gguf.F32ToF16(v))
						}
						continue
					}
					if typ == gguf.TypeBF16 {
						w.Type, w.Raw = typ, make([]byte, 2*len(w.Data))
						for j, v := range w.Data {
							h := bf16(v)
							binary.LittleEndian.PutUint16(w.Raw[2*j:], h)
							w.Data[j] = gguf.BF16ToF32(h)
						}
						continue
					}
					w.Type, w.Raw = typ, modeltest.RandomBlocks(r, typ, int(w.Dims[0]*w.Dims[1]))
					vals := make([]float32, w.Dims[0]*w.Dims[1])
					if err := gguf.Dequantize(typ, w.Raw, vals); err != nil {
						t.Fatal(err)
					}
					w.Data = vals
				}
				for _, w := range ts {
					deq = append(deq, gguf.WriteTensor{Name: w.Name, Dims: w.Dims, Type: gguf.TypeF32, Data: w.Data})
				}
				return meta, ts
			})
			ref := writeSpec(t, s, func(meta []gguf.KV, _ []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) { return meta, deq })
			m, f := loadT(t, quant), loadT(t, ref)
			if m.Info().Quant != typ.String() {
				t.Errorf("Quant %q, want %q", m.Info().Quant, typ)
			}
			if typ != gguf.TypeF16 && typ != gguf.TypeBF16 && m.Info().WeightBytes*3/2 > f.Info().WeightBytes {
				t.Errorf("reads %d weight bytes a token, f32 %d", m.Info().WeightBytes, f.Info().WeightBytes)
			}
			seq := randSeq(10, 264)
			a, b := logitsOf(t, m, seq), logitsOf(t, f, seq)
			var scale float64
			for _, v := range b {
				scale = max(scale, math.Abs(float64(v)))
			}
			d := maxDiff(a, b)
			// Random weights amplify the activations' rounding; a wrong
			// layout would be off by the logits' own size.
			if d > 0.1*scale || d == 0 {
				t.Errorf("logits differ from the dequantised F32 copy by %g (largest %g)", d, scale)
			}
			t.Logf("%s vs dequantised f32: max |diff| %.3g, largest logit %.3g", typ, d, scale)
			checkCached(t, m, 12)
			st := kvcache.NewState(m)
			if _, err := st.Forward(seq, 1); err != nil {
				t.Fatal(err)
			}
			if allocs := testing.AllocsPerRun(5, func() {
				st.Truncate(len(seq))
				if _, err := st.Forward([]int{7}, 1); err != nil {
					t.Fatal(err)
				}
			}); allocs != 0 && !testmodels.Race {
				t.Errorf("decode step allocates %v times", allocs)
			}
		})
	}
}

// bf16 is ggml_compute_fp32_to_bf16: round to nearest even.
func bf16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16 | 64)
	}
	return uint16((u + (0x7fff + (u >> 16 & 1))) >> 16)
}
