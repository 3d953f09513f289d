package course

import (
	"chat/models/kvcache"
	"errors"
	"strings"
	"testing"

	"chat/models/tokenizer/coursebpe"
	"chat/models/torchpt"
)

// synthCheckpoint wraps synthetic weights in a torchpt.Checkpoint, with a
// byte-level BPE spec (no merges: 256 bytes + EOT) as the course stores it.
func synthCheckpoint(t *testing.T, raw map[string]any) *torchpt.Checkpoint {
	t.Helper()
	cfg := map[string]any{}
	for k, v := range raw {
		cfg[k] = v
	}
	cfg["vocab_size"] = int64(257)
	ck := &torchpt.Checkpoint{Tensors: map[string]*torchpt.Tensor{}, Config: cfg,
		Payload: map[string]any{"stage": "sft", "step": int64(3)}}
	for k, v := range synthTensors(t, cfg, 5) {
		ck.Tensors[k] = &torchpt.Tensor{DType: v.DType, Shape: v.Shape, F32: v.F32}
	}
	ck.Tensors["pos_idxs"] = &torchpt.Tensor{DType: "int64", Shape: []int{24}, I64: make([]int64, 24)}
	cfg["tokenizer"] = map[string]any{"type": "bpe", "version": int64(1), "pattern": coursebpe.GPT4SplitPattern,
		"merges": []any{}, "special_tokens": []any{"<|endoftext|>"}}
	return ck
}

func TestFromCheckpoint(t *testing.T) {
	for _, arch := range []string{"classic", "modern", "mla"} {
		ck := synthCheckpoint(t, synthConfigs()[arch])
		m, err := FromCheckpoint(ck, "synth.pt")
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		info := m.Info()
		if info.Name != "synth.pt" || info.Stage != "sft" || m.Tokenizer().EOT() != 256 {
			t.Fatalf("%s: Info %+v, EOT %d", arch, info, m.Tokenizer().EOT())
		}
		ids := m.Tokenizer().Encode("hello")
		if _, err := kvcache.NewState(m).Forward(ids, 1); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFromCheckpointShapeError is the one-line message for a tensor whose
// shape does not fit the config.
func TestFromCheckpointShapeError(t *testing.T) {
	ck := synthCheckpoint(t, synthConfigs()["modern"])
	ck.Tensors["blocks.1.attn.q_proj.weight"] = &torchpt.Tensor{DType: "float32", Shape: []int{32, 16}, F32: make([]float32, 512)}
	_, err := FromCheckpoint(ck, "student.pt")
	want := "course: student.pt: blocks.1.attn.q_proj.weight has shape [32 16], config expects [32 32] (n_head=4, head_dim=8, n_embed=32)"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant  %s", err, want)
	}

	ck = synthCheckpoint(t, synthConfigs()["classic"])
	delete(ck.Tensors, "attn_blocks.0.attn.proj.bias")
	_, err = FromCheckpoint(ck, "old.pt")
	if err == nil || !strings.Contains(err.Error(), "missing attn_blocks.0.attn.proj.bias") {
		t.Fatalf("error %v", err)
	}
}

func TestFromCheckpointTiktoken(t *testing.T) {
	ck := synthCheckpoint(t, synthConfigs()["classic"])
	delete(ck.Config, "tokenizer")
	_, err := FromCheckpoint(ck, "legacy.pt")
	if err == nil || !strings.Contains(err.Error(), "r50k_base, which is not bundled") || !errors.Is(err, coursebpe.ErrTiktoken) {
		t.Fatalf("no tokenizer: error %v", err)
	}
	ck.Config["tokenizer"] = map[string]any{"type": "tiktoken", "name": "r50k_base"}
	_, err = FromCheckpoint(ck, "pile.pt")
	if err == nil || !strings.Contains(err.Error(), "r50k_base, which is not bundled") || !errors.Is(err, coursebpe.ErrTiktoken) {
		t.Fatalf("tiktoken: error %v", err)
	}
}

func TestFromCheckpointTokenizerTooBig(t *testing.T) {
	ck := synthCheckpoint(t, synthConfigs()["modern"])
	// A model with fewer rows than the tokenizer has ids cannot embed them.
	ck.Config["vocab_size"] = int64(200)
	for k, v := range synthTensors(t, ck.Config, 5) {
		ck.Tensors[k] = &torchpt.Tensor{DType: v.DType, Shape: v.Shape, F32: v.F32}
	}
	if _, err := FromCheckpoint(ck, "x.pt"); err == nil || !strings.Contains(err.Error(), "tokenizer has 257 ids") {
		t.Fatalf("error %v", err)
	}
}
