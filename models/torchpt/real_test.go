package torchpt

import (
	"archive/zip"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"chat/models/testmodels"
)

// paramCount counts floating tensors, a tensor sharing another's memory once.
func paramCount(c *Checkpoint) int64 {
	seen := map[*float32]bool{}
	var n int64
	for _, t := range c.Tensors {
		if len(t.F32) == 0 {
			continue
		}
		if seen[&t.F32[0]] {
			continue
		}
		seen[&t.F32[0]] = true
		n += int64(len(t.F32))
	}
	return n
}

func TestRealCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		rel     string
		tensors int
		arch    any
		embed   int64
	}{
		{"course/tiny.pt", 25, "modern", 64},
		{"course/tiny-classic.pt", 51, nil, 64},
		{"course/student.pt", 47, "modern", 192},
		{"course/tiny-gqa.pt", 25, "modern", 64},
		{"course/tiny-noqknorm.pt", 21, "modern", 64},
		{"course/tiny-gate.pt", 27, "modern", 64},
		{"course/tiny-window.pt", 25, "modern", 64},
		{"course/tiny-mla.pt", 25, "modern", 64},
		{"course/tiny-moe.pt", 51, "modern", 64},
		{"course/tiny-untied.pt", 25, "modern", 64},
		{"embed/student-chat.pt", 47, "modern", 192},
	} {
		t.Run(tc.rel, func(t *testing.T) {
			path := testmodels.Path(t, tc.rel)
			c, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Tensors) != tc.tensors {
				t.Errorf("%d tensors, want %d: %v", len(c.Tensors), tc.tensors, c.Keys())
			}
			if c.Config["arch"] != tc.arch || c.Config["n_embed"] != tc.embed {
				t.Errorf("config arch %v n_embed %v", c.Config["arch"], c.Config["n_embed"])
			}
			for _, k := range c.Keys() {
				tt := c.Tensors[k]
				if tt.DType != "float32" && k != "pos_idxs" {
					t.Errorf("%s dtype %s", k, tt.DType)
				}
				if len(tt.F32)+len(tt.I64) != tt.Numel() {
					t.Errorf("%s: %d values for shape %v", k, len(tt.F32)+len(tt.I64), tt.Shape)
				}
				for _, v := range tt.F32 {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || math.Abs(float64(v)) > 100 {
						t.Errorf("%s holds %v", k, v)
						break
					}
				}
			}
			for _, k := range []string{"optimizer_state_dict", "model_state_dict", "config"} {
				if _, ok := c.Payload[k]; ok {
					t.Errorf("payload holds %s", k)
				}
			}
			if c.Payload["pytorch_version"] != "1.13.0a0" || c.Payload["device"] != "cpu" || c.Payload["cuda_version"] != nil {
				t.Errorf("payload versions: %v %v %v", c.Payload["pytorch_version"], c.Payload["device"], c.Payload["cuda_version"])
			}
			if l, ok := c.Payload["losses"].([]any); !ok || len(l) == 0 {
				t.Errorf("losses = %T", c.Payload["losses"])
			} else if _, ok := l[0].(float64); !ok {
				t.Errorf("losses[0] = %T", l[0])
			}
			// The golden file's parameter count (tied matrix once).
			name := strings.TrimSuffix(filepath.Base(path), ".pt")
			gb, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "course", "golden", name+".json"))
			if err != nil {
				t.Skipf("no golden file: %v", err)
			}
			var g struct {
				ParamCount int64 `json:"param_count"`
			}
			if err := json.Unmarshal(gb, &g); err != nil {
				t.Fatal(err)
			}
			if got := paramCount(c); got != g.ParamCount {
				t.Errorf("param count %d, golden %d", got, g.ParamCount)
			}
		})
	}
}

func TestTinyConfigAndOptimizerSkipped(t *testing.T) {
	path := testmodels.Path(t, "course/tiny.pt")
	reads := 0
	storageReadHook = func(string) { reads++ }
	defer func() { storageReadHook = nil }()
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// 25 tensors, two of them tied to one storage; the AdamW state (storages
	// 24 and up) is never read.
	if reads != 24 {
		t.Errorf("%d storages read, want 24", reads)
	}
	if got := c.Tensors["token_embed.weight"].Shape; !reflect.DeepEqual(got, []int{4096, 64}) {
		t.Errorf("token_embed.weight shape %v", got)
	}
	if c.Config["n_embed"] != int64(64) || c.Config["context_length"] != int64(128) || c.Config["vocab_size"] != int64(4096) {
		t.Errorf("config sizes: %v %v %v", c.Config["n_embed"], c.Config["context_length"], c.Config["vocab_size"])
	}
	tok, ok := c.Config["tokenizer"].(map[string]any)
	if !ok {
		t.Fatalf("tokenizer is %T", c.Config["tokenizer"])
	}
	merges, ok := tok["merges"].([]any)
	if !ok || len(merges) != 3839 {
		t.Fatalf("merges: %T len %d", tok["merges"], len(merges))
	}
	// Byte-identical to the tokenizer.json next to the checkpoints.
	tb, err := os.ReadFile(filepath.Join(filepath.Dir(path), "tokenizer.json"))
	if err != nil {
		t.Skipf("tokenizer.json: %v", err)
	}
	var spec struct {
		Merges        [][]int64 `json:"merges"`
		SpecialTokens []string  `json:"special_tokens"`
		Pattern       string    `json:"pattern"`
	}
	if err := json.Unmarshal(tb, &spec); err != nil {
		t.Fatal(err)
	}
	for i, m := range merges {
		pair, ok := m.([]any)
		if !ok || len(pair) != 2 || pair[0] != spec.Merges[i][0] || pair[1] != spec.Merges[i][1] {
			t.Fatalf("merge %d = %v, want %v", i, m, spec.Merges[i])
		}
	}
	if tok["pattern"] != spec.Pattern || !reflect.DeepEqual(tok["special_tokens"], []any{"<|endoftext|>"}) {
		t.Errorf("tokenizer pattern/special tokens differ")
	}
}

func TestTinyClassic(t *testing.T) {
	c, err := Open(testmodels.Path(t, "course/tiny-classic.pt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Config["arch"]; ok {
		t.Errorf("classic config has arch %v", c.Config["arch"])
	}
	if got := c.Tensors["lm_head.bias"].Shape; !reflect.DeepEqual(got, []int{4096}) {
		t.Errorf("lm_head.bias shape %v", got)
	}
	p := c.Tensors["pos_idxs"]
	if p.DType != "int64" || !reflect.DeepEqual(p.Shape, []int{128}) || len(p.I64) != 128 || p.F32 != nil {
		t.Fatalf("pos_idxs = %s %v", p.DType, p.Shape)
	}
	for i, v := range p.I64 {
		if v != int64(i) {
			t.Fatalf("pos_idxs[%d] = %d", i, v)
		}
	}
}

func TestStudentChatPayload(t *testing.T) {
	c, err := Open(testmodels.Path(t, "embed/student-chat.pt"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Payload["stage"] != "sft" {
		t.Errorf("stage = %v", c.Payload["stage"])
	}
	if s, ok := c.Payload["chat_template"].(string); !ok || !strings.Contains(s, "<|assistant|>") {
		t.Errorf("chat_template = %v", c.Payload["chat_template"])
	}
	if sft, ok := c.Payload["sft"].(map[string]any); !ok || sft["steps"] != int64(365) {
		t.Errorf("sft = %v", c.Payload["sft"])
	}
	if _, ok := c.Payload["optimizer_state_dict"]; ok {
		t.Errorf("optimizer_state_dict (None) kept in payload")
	}
	if got := c.Tensors["token_embed.weight"].Shape; !reflect.DeepEqual(got, []int{4096, 192}) {
		t.Errorf("token_embed.weight shape %v", got)
	}
}

// TestTiedStorage checks tied tensors against the raw storage bytes, read
// here independently of the package.
func TestTiedStorage(t *testing.T) {
	for _, rel := range []string{"course/tiny.pt", "embed/student-chat.pt"} {
		path := testmodels.Path(t, rel)
		c, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		var raw []byte
		for _, f := range zr.File {
			if strings.HasSuffix(f.Name, "/data/0") {
				rc, _ := f.Open()
				raw, _ = io.ReadAll(rc)
				rc.Close()
			}
		}
		zr.Close()
		emb, head := c.Tensors["token_embed.weight"], c.Tensors["lm_head.weight"]
		if len(raw) != 4*len(emb.F32) {
			t.Fatalf("%s: storage 0 has %d bytes for %d values", rel, len(raw), len(emb.F32))
		}
		for i := range emb.F32 {
			want := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			if emb.F32[i] != want || head.F32[i] != want {
				t.Fatalf("%s: value %d: embed %v head %v raw %v", rel, i, emb.F32[i], head.F32[i], want)
			}
		}
	}
	// Untied: different data.
	c, err := Open(testmodels.Path(t, "course/tiny-untied.pt"))
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(c.Tensors["token_embed.weight"].F32, c.Tensors["lm_head.weight"].F32) {
		t.Errorf("untied model has equal embed and head")
	}
}
