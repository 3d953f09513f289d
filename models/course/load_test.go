package course

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"chat/models/kvcache"
	"chat/models/testmodels"
	"chat/models/testmodels/r50k"
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
	ck := &torchpt.Checkpoint{Tensors: map[string]*torchpt.Tensor{}, Config: cfg, ConfigKey: "config",
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
	t.Setenv("TIKTOKEN_CACHE_DIR", t.TempDir()) // an empty cache
	ck := synthCheckpoint(t, synthConfigs()["classic"])
	delete(ck.Config, "tokenizer")
	_, err := FromCheckpoint(ck, "legacy.pt")
	if err == nil || !strings.Contains(err.Error(), "the config names no tokenizer, so the course uses tiktoken r50k_base, and its rank file is not in tiktoken's cache") || !errors.Is(err, coursebpe.ErrTiktoken) {
		t.Fatalf("no tokenizer: error %v", err)
	}
	testmodels.OneShortLine(t, err, 400)
	ck.Config["tokenizer"] = map[string]any{"type": "tiktoken", "name": "cl100k_base"}
	_, err = FromCheckpoint(ck, "pile.pt")
	if err == nil || !strings.Contains(err.Error(), "tokenizer is tiktoken cl100k_base, and its rank file is not in tiktoken's cache") || !errors.Is(err, coursebpe.ErrTiktoken) {
		t.Fatalf("tiktoken: error %v", err)
	}
}

// TestPostTrainingCheckpoint: a post-training checkpoint (cfg, no tokenizer,
// vocab padded to 50304, keys of a reward model's backbone) chats with
// r50k_base as the course's chat path does, read from tiktoken's cache.
func TestPostTrainingCheckpoint(t *testing.T) {
	r50k.Cache(t)
	raw := synthConfigs()["modern"]
	raw["vocab_size"] = int64(50304)
	ck := &torchpt.Checkpoint{Tensors: map[string]*torchpt.Tensor{}, Config: raw, ConfigKey: "cfg",
		Payload: map[string]any{"stage": "sft"}}
	for k, v := range synthTensors(t, raw, 5) {
		ck.Tensors[k] = &torchpt.Tensor{DType: v.DType, Shape: v.Shape, F32: v.F32}
	}
	m, err := FromCheckpoint(ck, "sft.pt")
	if err != nil {
		t.Fatal(err)
	}
	tok := m.Tokenizer()
	if tok.EOT() != 50256 || m.Info().VocabSize != 50304 || !m.Info().ChatTuned() || m.Info().ContextLength != 24 {
		t.Fatalf("EOT %d, info %+v", tok.EOT(), m.Info())
	}
	if ids := tok.Encode("<|user|>\n"); !reflect.DeepEqual(ids, []int{27, 91, 7220, 91, 29, 198}) {
		t.Errorf("header ids %v", ids)
	}
	if _, err := kvcache.NewState(m).Forward(tok.Encode("Hello there"), 1); err != nil {
		t.Fatal(err)
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

// TestTrainingWindow: a trainer's t_context_length is the window, as in
// generate_text.py, and the rest of the context is there for --ctx-size
// (Info.TrainContext); a post-training cfg has no window (chat.py), nor
// does a config without the key (root train.py trains on the context); a
// checkpoint without a config gets default_config's 16.
func TestTrainingWindow(t *testing.T) {
	for _, tc := range []struct {
		from       string
		tw         any
		ctx, train int
	}{
		{"config", int64(8), 8, 24},
		{"config", nil, 24, 0},
		{"config", int64(24), 24, 0},
		{"config", int64(0), 24, 0},
		{"cfg", int64(8), 24, 0},
		{"cfg", nil, 24, 0},
	} {
		ck := synthCheckpoint(t, synthConfigs()["classic"])
		ck.ConfigKey = tc.from
		if tc.tw != nil {
			ck.Config["t_context_length"] = tc.tw
		}
		m, err := FromCheckpoint(ck, "w.pt")
		if err != nil {
			t.Fatal(err)
		}
		if in := m.Info(); in.ContextLength != tc.ctx || in.TrainContext != tc.train {
			t.Errorf("%s t_context_length=%v: context %d of %d, want %d of %d", tc.from, tc.tw, in.ContextLength, in.TrainContext, tc.ctx, tc.train)
		}
	}
	if c, err := parseConfig(map[string]any{}, ""); err != nil || c.TrainWindow != 16 || c.Ctx != 512 {
		t.Errorf("no config: window %d of %d (%v)", c.TrainWindow, c.Ctx, err)
	}
}

// TestKeysNamed: a checkpoint from a changed model (a parameter the
// course's model does not have) is refused naming the tensors; one from
// before the attention projection says so; one without a config says the
// default sizes were assumed; tensors outside the model are ignored as the
// course ignores them.
func TestKeysNamed(t *testing.T) {
	f32 := func(n ...int) *torchpt.Tensor {
		size := 1
		for _, d := range n {
			size *= d
		}
		return &torchpt.Tensor{DType: "float32", Shape: n, F32: make([]float32, size)}
	}
	ck := synthCheckpoint(t, synthConfigs()["modern"])
	ck.Tensors["blocks.0.attn.q_proj.bias"] = f32(32)
	ck.Tensors["blocks.1.attn.k_proj.bias"] = f32(16)
	_, err := FromCheckpoint(ck, "bias.pt")
	if err == nil || !strings.Contains(err.Error(), `tensors "blocks.0.attn.q_proj.bias", "blocks.1.attn.k_proj.bias", which the course's model does not have`) {
		t.Errorf("extra parameters: %v", err)
	}
	testmodels.OneShortLine(t, err, 300)
	ck.Tensors["blocks.1.attn.q_proj.lora_A"] = f32(4, 32)
	_, err = FromCheckpoint(ck, "lora.pt")
	if err == nil || !strings.Contains(err.Error(), `"blocks.1.attn.q_proj.lora_A" is an unmerged LoRA adapter`) {
		t.Errorf("LoRA: %v", err)
	}

	ck = synthCheckpoint(t, synthConfigs()["modern"])
	ck.Tensors["reward_head.weight"] = f32(1, 32)
	if _, err := FromCheckpoint(ck, "reward.pt"); err != nil {
		t.Errorf("reward head: %v", err)
	}

	ck = synthCheckpoint(t, synthConfigs()["classic"])
	for l := 0; l < 2; l++ {
		delete(ck.Tensors, fmt.Sprintf("attn_blocks.%d.attn.proj.weight", l))
		delete(ck.Tensors, fmt.Sprintf("attn_blocks.%d.attn.proj.bias", l))
	}
	_, err = FromCheckpoint(ck, "old.pt")
	if err == nil || !strings.Contains(err.Error(), "predates the attention output projection") {
		t.Errorf("old classic: %v", err)
	}

	ck = synthCheckpoint(t, synthConfigs()["modern"])
	ck.Tensors["blocks.0.attn.c_attn.weight"] = f32(96, 32)
	delete(ck.Tensors, "blocks.0.attn.q_proj.weight")
	ck.Config["arch"] = "classic"
	_, err = FromCheckpoint(ck, "other.pt")
	if err == nil || !strings.Contains(err.Error(), `the checkpoint has 23 tensors such as "blocks.0.attn.c_attn.weight"`) {
		t.Errorf("other model: %v", err)
	}
	testmodels.OneShortLine(t, err, 400)

	ck = synthCheckpoint(t, synthConfigs()["modern"])
	ck.Config, ck.ConfigKey = map[string]any{}, ""
	_, err = FromCheckpoint(ck, "bare.pt")
	if err == nil || !strings.Contains(err.Error(), "the checkpoint stores no cfg or config, so the course's default sizes apply (n_embed=2048 n_head=16 n_blocks=64)") {
		t.Errorf("bare state dict: %v", err)
	}
	testmodels.OneShortLine(t, err, 400)
}

// ptTensors are synthetic weights as TorchSave takes them, each name with
// prefix in front; a tied lm_head stays one storage.
func ptTensors(ts map[string]tensor, prefix string) testmodels.StateDict {
	sd := testmodels.StateDict{}
	shared := map[*float32]*testmodels.PT{}
	for k, v := range ts {
		p, ok := shared[&v.F32[0]]
		if !ok {
			p = &testmodels.PT{Shape: v.Shape, F32: v.F32}
			shared[&v.F32[0]] = p
		}
		sd[prefix+k] = p
	}
	return sd
}

// TestLoadFileVariants writes checkpoints as the course's torch.save does
// and loads them from disk: an empty cfg beside a trainer's config, and a
// reward model's post-training file (cfg without a tokenizer, backbone
// under transformer., a reward head); each gives the logits of its weights
// loaded directly.
func TestLoadFileVariants(t *testing.T) {
	r50k.Cache(t)
	dir := t.TempDir()
	base := synthConfigs()["modern"]
	base["vocab_size"] = int64(257)
	raw := map[string]any{"n_kv_head": int64(0)} // the default: n_head
	for k, v := range base {
		raw[k] = v
	}
	ts := synthTensors(t, base, 8)
	ids := []int{5, 7, 9, 11}
	want, _ := kvcache.NewState(synthModel(t, base, 8)).Forward(ids, 1)
	want = append([]float32(nil), want...)

	withTok := map[string]any{}
	for k, v := range raw {
		withTok[k] = v
	}
	withTok["tokenizer"] = synthCheckpoint(t, raw).Config["tokenizer"]
	rewardCfg := map[string]any{}
	for k, v := range raw {
		rewardCfg[k] = v
	}
	rewardCfg["vocab_size"] = int64(50304)
	rts := synthTensors(t, rewardCfg, 8)
	rsd := ptTensors(rts, "transformer.")
	rsd["reward_head.weight"] = &testmodels.PT{Shape: []int{1, 32}, F32: make([]float32, 32)}
	rsd["reward_head.bias"] = &testmodels.PT{Shape: []int{1}, F32: make([]float32, 1)}
	rwant, _ := kvcache.NewState(synthModel(t, rewardCfg, 8)).Forward(ids, 1)
	rwant = append([]float32(nil), rwant...)

	for _, tc := range []struct {
		name    string
		payload map[string]any
		want    []float32
	}{
		{"empty-cfg.pt", map[string]any{"model_state_dict": ptTensors(ts, "module."), "cfg": map[string]any{},
			"config": withTok, "step": 3}, want},
		{"reward.pt", map[string]any{"model_state_dict": rsd, "cfg": rewardCfg, "stage": "reward",
			"optimizer_state_dict": nil, "metrics": map[string]any{"acc": 0.5}}, rwant},
	} {
		path := filepath.Join(dir, tc.name)
		testmodels.TorchSave(t, path, tc.payload)
		m, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := kvcache.NewState(m).Forward(ids, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(got, tc.want); d != 0 {
			t.Errorf("%s: logits differ by %g", tc.name, d)
		}
	}
}
