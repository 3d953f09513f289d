package convert

import (
	"fmt"
	"strconv"
	"strings"

	"chat/models/course"
	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// The course's modern model is llama.cpp's qwen3 when it has QK-norm (an
// RMSNorm over each head of Q and K before the rotation, rope over split
// halves: ggml's NEOX mode) and its llama without (rope over adjacent
// pairs, ggml's NORM mode, so the rows of Q and K are permuted per head as
// convert_hf_to_gguf.py permutes a Hugging Face Llama). Both fall back to
// the token embedding when output.weight is absent, which is the course's
// tied lm_head; the course adds no BOS.
//
// courseTop and courseBlock are the table: a course tensor name (in a
// block, after "blocks.N.") and the llama.cpp name it is written under
// (after "blk.N.").
var (
	courseTop = map[string]string{
		"token_embed.weight": "token_embd.weight",
		"lm_head.weight":     "output.weight",
		"final_norm.weight":  "output_norm.weight",
	}
	courseBlock = map[string]string{
		"attn_norm.weight":   "attn_norm.weight",
		"attn.q_proj.weight": "attn_q.weight",
		"attn.k_proj.weight": "attn_k.weight",
		"attn.v_proj.weight": "attn_v.weight",
		"attn.o_proj.weight": "attn_output.weight",
		"attn.q_norm.weight": "attn_q_norm.weight",
		"attn.k_norm.weight": "attn_k_norm.weight",
		"mlp_norm.weight":    "ffn_norm.weight",
		"mlp.gate.weight":    "ffn_gate.weight",
		"mlp.up.weight":      "ffn_up.weight",
		"mlp.down.weight":    "ffn_down.weight",
	}
)

// GGUFName is the llama.cpp name of a course tensor ("blocks.2.attn.q_proj.weight"
// → "blk.2.attn_q.weight"), or "" when the table has none.
func GGUFName(ptName string) string {
	return rename(ptName, "blocks.", "blk.", courseTop, courseBlock)
}

// CourseName is the course name of a llama.cpp tensor, the inverse of
// GGUFName ("" when the table has none).
func CourseName(ggufName string) string {
	return rename(ggufName, "blk.", "blocks.", invert(courseTop), invert(courseBlock))
}

func rename(name, fromBlock, toBlock string, top, block map[string]string) string {
	if rest, ok := strings.CutPrefix(name, fromBlock); ok {
		num, tail, _ := strings.Cut(rest, ".")
		if _, err := strconv.Atoi(num); err == nil && block[tail] != "" {
			return toBlock + num + "." + block[tail]
		}
		return ""
	}
	return top[name]
}

func invert(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// CourseArch is the llama.cpp architecture a course model converts to, or
// an error saying why there is none.
func CourseArch(c course.Config) (string, error) {
	var why []string
	switch {
	case c.Arch == "classic":
		return "", fmt.Errorf("convert: the classic course model has no llama.cpp architecture that computes it: " +
			"learned positions and LayerNorm are gpt2's and mpt's, but llama.cpp has no such model with a ReLU MLP " +
			"or a bias on the output layer (lm_head.bias)")
	case c.Attention == "mla":
		why = append(why, "multi-head latent attention (llama.cpp's deepseek2 MLA caches the latent with a shared rope key laid out differently, and this app has no GGUF MLA to check it)")
	}
	if c.Experts > 0 {
		why = append(why, fmt.Sprintf("mixture of experts (n_experts=%d; not written yet: llama.cpp's qwen3moe, which this app runs, has no ungated shared expert)", c.Experts))
	}
	if c.AttnGate {
		why = append(why, "the sigmoid attention output gate (attn_gate; no llama.cpp dense architecture has it)")
	}
	if c.Sliding > 0 {
		why = append(why, fmt.Sprintf("sliding-window attention (sliding_window=%d; llama.cpp's qwen3 and llama attend to the whole context)", c.Sliding))
	}
	if len(why) > 0 {
		return "", fmt.Errorf("convert: this model cannot be written for llama.cpp: %s", strings.Join(why, "; "))
	}
	if c.QKNorm {
		return "qwen3", nil
	}
	return "llama", nil
}

// FromCourse describes m as a GGUF file of float32 tensors (SetTypes then
// picks the written types). name is general.name.
func FromCourse(m *course.Model, name string) (*File, error) {
	c := m.Config()
	arch, err := CourseArch(c)
	if err != nil {
		return nil, err
	}
	meta, err := courseVocab(m)
	if err != nil {
		return nil, err
	}
	key := func(k string) string { return arch + "." + k }
	u32 := func(k string, v int) gguf.KV { return gguf.KV{Key: key(k), Type: gguf.Uint32, Value: uint32(v)} }
	f32 := func(k string, v float64) gguf.KV { return gguf.KV{Key: key(k), Type: gguf.Float32, Value: float32(v)} }
	hp := []gguf.KV{
		{Key: "general.name", Type: gguf.String, Value: name},
		u32("context_length", c.Ctx),
		u32("embedding_length", c.Embed),
		u32("block_count", c.Blocks),
		u32("feed_forward_length", c.FFN),
		u32("attention.head_count", c.Heads),
		u32("attention.head_count_kv", c.KVHeads),
		u32("attention.key_length", c.HeadDim),
		u32("attention.value_length", c.HeadDim),
		u32("rope.dimension_count", c.HeadDim),
		f32("rope.freq_base", c.RopeTheta),
		f32("attention.layer_norm_rms_epsilon", c.NormEps),
	}
	f := &File{Arch: arch, Meta: append(hp, meta...)}
	ts := nn.Tensors(m.Arch(), "pt")
	var embed weights.Linear
	for _, t := range ts {
		if t.Name == "token_embed.weight" {
			embed = t.Linear
		}
	}
	for _, t := range ts {
		if t.Name == "lm_head.weight" && t.Linear == embed {
			continue // tied: llama.cpp falls back to token_embd.weight
		}
		g := GGUFName(t.Name)
		if g == "" {
			return nil, fmt.Errorf("convert: course tensor %s has no llama.cpp name", t.Name)
		}
		out := Tensor{Name: g}
		if t.Linear != nil {
			out.Shape = []int{t.Linear.Rows(), t.Linear.Cols()}
			out.Data = weights.Dequantize(t.Linear)
			if arch == "llama" && (strings.HasSuffix(g, "attn_q.weight") || strings.HasSuffix(g, "attn_k.weight")) {
				out.Data = PairRows(out.Data, out.Shape[1], c.HeadDim)
			}
		} else {
			out.Shape = []int{len(t.Floats)}
			out.Data = t.Floats
		}
		f.Tensors = append(f.Tensors, out)
	}
	return f, nil
}

// PairRows reorders the rows of a projection whose heads (head rows each)
// are rotated over split halves (i, i+head/2) so that adjacent rows are
// rotated together (ggml's NORM rope): row 2i of a head takes row i and row
// 2i+1 takes row i+head/2. It returns a new slice.
func PairRows(w []float32, cols, head int) []float32 {
	out := make([]float32, len(w))
	rows, half := len(w)/cols, head/2
	for r := 0; r < rows; r++ {
		h, j := r/head, r%head
		src := h*head + j/2 + (j%2)*half
		copy(out[r*cols:(r+1)*cols], w[src*cols:(src+1)*cols])
	}
	return out
}

// UnpairRows is the inverse of PairRows: adjacent rows back to split halves.
func UnpairRows(w []float32, cols, head int) []float32 {
	out := make([]float32, len(w))
	rows, half := len(w)/cols, head/2
	for r := 0; r < rows; r++ {
		h, j := r/head, r%head
		dst := h*head + j/2 + (j%2)*half
		copy(out[dst*cols:(dst+1)*cols], w[r*cols:(r+1)*cols])
	}
	return out
}
