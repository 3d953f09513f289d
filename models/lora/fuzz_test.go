package lora

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"chat/models/weights"
)

// FuzzLoad feeds arbitrary adapter files to both loaders: config and
// tensors as a PEFT folder's adapter_config.json and
// adapter_model.safetensors, and tensors alone as a GGUF adapter. Each
// must load or give one line, never panic or hang, and a loaded adapter's
// pairs must chain. The seeds are a two-pair adapter in both formats (a
// few hundred bytes), so each input is cheap.
func FuzzLoad(f *testing.F) {
	a := &Adapter{Pairs: []Pair{
		{Target: "blk.0.attn_q.weight", A: weights.NewF32(make([]float32, 8), 2, 4), B: weights.NewF32([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 4, 2)},
		{Target: "blk.0.ffn_up.weight", A: weights.NewF32(make([]float32, 4), 1, 4), B: weights.NewF32([]float32{1, -1}, 2, 1)},
	}}
	seed := f.TempDir()
	if err := WritePEFT(seed, a, 2); err != nil {
		f.Fatal(err)
	}
	config, _ := os.ReadFile(filepath.Join(seed, "adapter_config.json"))
	tensors, _ := os.ReadFile(filepath.Join(seed, "adapter_model.safetensors"))
	var g bytes.Buffer
	if err := WriteGGUF(&g, a, "llama", 2); err != nil {
		f.Fatal(err)
	}
	f.Add(config, tensors)
	f.Add([]byte(`{"r": 2, "lora_alpha": 1e300, "alpha_pattern": {"q_proj": -1}}`), g.Bytes())
	f.Fuzz(func(t *testing.T, config, tensors []byte) {
		dir := t.TempDir()
		peft := filepath.Join(dir, "peft")
		os.Mkdir(peft, 0o755)
		os.WriteFile(filepath.Join(peft, "adapter_config.json"), config, 0o644)
		os.WriteFile(filepath.Join(peft, "adapter_model.safetensors"), tensors, 0o644)
		file := filepath.Join(dir, "adapter.gguf")
		os.WriteFile(file, tensors, 0o644)
		for _, path := range []string{peft, file} {
			ad, err := Load(path)
			if err != nil {
				if strings.Contains(err.Error(), "\n") || len(err.Error()) > 1000 {
					t.Fatalf("%s: error of %d bytes, not one line: %.200q", path, len(err.Error()), err)
				}
				continue
			}
			for _, p := range ad.Pairs {
				if p.Rank() < 1 || p.B.Cols() != p.Rank() || p.A.Cols() < 1 || p.B.Rows() < 1 {
					t.Fatalf("%s: %s: A [%d][%d], B [%d][%d]", path, p.Target, p.A.Rows(), p.A.Cols(), p.B.Rows(), p.B.Cols())
				}
			}
		}
	})
}
