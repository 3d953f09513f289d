package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"chat/models/testmodels"
)

// What a new user gives as a model by mistake gets one line naming it and
// what to give instead.
func TestOpenMistakes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("hf/config.json", []byte("{}"))
	write("hf/model.safetensors", append([]byte{2, 0, 0, 0, 0, 0, 0, 0}, "{}"...))
	write("models/a.gguf", nil)
	empty := write("empty.gguf", nil)
	st := write("model.safetensors", append([]byte{2, 0, 0, 0, 0, 0, 0, 0}, "{}"...))
	cases := []struct{ path, want string }{
		{"llama3.2", "llama3.2: no such file (a model is the path of a GGUF or .pt file; none is downloaded by name)"},
		{filepath.Join(dir, "hf"), "is a folder of safetensors weights (a Hugging Face model): convert the model to GGUF"},
		{filepath.Join(dir, "models"), "is a directory: give one of its model files (a.gguf)"},
		{dir + "/hf/..", "is a directory: give one of its model files (empty.gguf"},
		{empty, "empty.gguf is empty (0 bytes)"},
		{st, "model.safetensors is a safetensors file: convert the model to GGUF"},
	}
	for _, c := range cases {
		_, err := Open(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Open(%s): %v; want one line with %q", c.path, err, c.want)
		}
	}
}

// A GGUF file cut short (an interrupted download) says so and what to do.
func TestOpenTruncatedGGUF(t *testing.T) {
	data, err := os.ReadFile(testmodels.Path(t, "stories260K/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "t.gguf")
	if err := os.WriteFile(p, data[:len(data)*3/4], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(p)
	if err == nil || !strings.Contains(err.Error(), "the file is truncated; download or copy it again") {
		t.Errorf("a truncated GGUF: %v", err)
	}
}
