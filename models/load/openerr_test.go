package load

import (
	"archive/zip"
	"bytes"
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
	write("stories/tiny.pt", nil)
	cases := []struct{ path, want string }{
		// ollama's habit, the name without its extension: the file beside
		// it is named (it said "none is downloaded by name").
		{filepath.Join(dir, "models", "a"), "models/a: no such file (did you mean " + filepath.Join(dir, "models", "a.gguf") + "?)"},
		{filepath.Join(dir, "stories", "tiny"), "stories/tiny: no such file (did you mean " + filepath.Join(dir, "stories", "tiny.pt") + "?)"},
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

// A Hugging Face pytorch_model.bin (a bare state dict, its tensors named
// model.layers.N...) was read as a course checkpoint and refused with
// "missing token_embed.weight, config expects shape [50304 2048]"; it says
// what it is and what to do. The pickle is what torch.save writes for an
// OrderedDict of three 4x4 float32 tensors.
func TestOpenHuggingFacePyTorch(t *testing.T) {
	const pkl = "\x80\x02ccollections\x0aOrderedDict\x0aq\x00)Rq\x01(X\x19\x00\x00\x00model.embed_tokens.weightq\x02ctorch._utils\x0a_rebuild_tensor_v2\x0aq\x03((X\x07\x00\x00\x00storageq\x04ctorch\x0aFloatStorage\x0aq\x05X\x01\x00\x00\x000q\x06X\x03\x00\x00\x00cpuq\x07K\x10tq\x08QK\x00K\x04K\x04\x86q\x09K\x04K\x01\x86q\x0a\x89h\x00)Rq\x0btq\x0cRq\x0dX&\x00\x00\x00model.layers.0.self_attn.q_proj.weightq\x0eh\x03((h\x04h\x05X\x01\x00\x00\x001q\x0fh\x07K\x10tq\x10QK\x00h\x09K\x04K\x01\x86q\x11\x89h\x00)Rq\x12tq\x13Rq\x14X\x0e\x00\x00\x00lm_head.weightq\x15h\x03((h\x04h\x05X\x01\x00\x00\x002q\x16h\x07K\x10tq\x17QK\x00h\x09K\x04K\x01\x86q\x18\x89h\x00)Rq\x19tq\x1aRq\x1bu."
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	add := func(name string, data []byte) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	add("archive/data.pkl", []byte(pkl))
	for _, k := range []string{"0", "1", "2"} {
		add("archive/data/"+k, make([]byte, 64))
	}
	add("archive/version", []byte("3\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "pytorch_model.bin")
	if err := os.WriteFile(p, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p)
	want := "pytorch_model.bin is a Hugging Face model's PyTorch weights, not a course checkpoint: convert the model to GGUF"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a pytorch_model.bin: %v; want %q", err, want)
	}
}

// TestOpenBareStateDict: a course model's bare state dict (lm_head.weight
// among its keys) is a course checkpoint without a config, said so; a
// GPT-2's (transformer.h.N...) is still a Hugging Face model's.
func TestOpenBareStateDict(t *testing.T) {
	dir := t.TempDir()
	w := &testmodels.PT{Shape: []int{4, 4}, F32: make([]float32, 16)}
	course := filepath.Join(dir, "course.pt")
	testmodels.TorchSave(t, course, map[string]any{"token_embed.weight": w, "lm_head.weight": w, "final_norm.weight": &testmodels.PT{Shape: []int{4}, F32: make([]float32, 4)}})
	if _, err := Open(course); err == nil || !strings.Contains(err.Error(), "the checkpoint stores no cfg or config") {
		t.Errorf("course state dict: %v", err)
	}
	gpt2 := filepath.Join(dir, "gpt2.bin")
	testmodels.TorchSave(t, gpt2, map[string]any{"transformer.wte.weight": w, "transformer.h.0.attn.c_attn.weight": w, "lm_head.weight": w})
	if _, err := Open(gpt2); err == nil || !strings.Contains(err.Error(), "Hugging Face model's PyTorch weights") {
		t.Errorf("GPT-2 state dict: %v", err)
	}
}

// A llama2.c checkpoint (karpathy's stories*.bin, which llama.cpp's
// stories models come from) was "neither a PyTorch zip checkpoint nor a
// GGUF file": it is named, with the GGUF file beside it when there is one
// (../shared/models/stories260K), or how to make one.
func TestOpenLlama2c(t *testing.T) {
	bin := testmodels.Path(t, "stories260K/stories260K.bin")
	_, err := Open(bin)
	if err == nil || !strings.Contains(err.Error(), "is a llama2.c checkpoint") || !strings.Contains(err.Error(), "stories260K.gguf, is one chat runs") {
		t.Errorf("beside its GGUF file: %v", err)
	}
	b, _ := os.ReadFile(bin)
	alone := filepath.Join(t.TempDir(), "stories.bin")
	os.WriteFile(alone, b, 0o644)
	if _, err := Open(alone); err == nil || !strings.Contains(err.Error(), "is a llama2.c checkpoint") || !strings.Contains(err.Error(), "llama-convert-llama2c-to-ggml") {
		t.Errorf("alone: %v", err)
	}
	// Its tokenizer file is not one.
	if _, err := Open(testmodels.Path(t, "stories260K/tok512.bin")); err == nil || strings.Contains(err.Error(), "llama2.c") {
		t.Errorf("tok512.bin: %v", err)
	}
}

// A model named by its file name alone, or a path that is not there, when
// the shared models folder has that file (chat -m stories260K.gguf, as the
// README's examples name it): "did you mean" names it.
func TestOpenFindsTheSharedFile(t *testing.T) {
	shared := t.TempDir()
	os.MkdirAll(filepath.Join(shared, "stories"), 0o755)
	want := filepath.Join(shared, "stories", "tiny*.gguf")
	os.WriteFile(want, []byte("GGUF"), 0o644)
	t.Setenv("CHAT_SHARED_MODELS", shared)
	for _, name := range []string{"tiny*.gguf", "tiny*", filepath.Join("models", "tiny*.gguf")} {
		if _, err := Open(name); err == nil || !strings.Contains(err.Error(), "no such file (did you mean "+want+"?)") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Open("tiny?.gguf"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a pattern matched: %v", err)
	}
}

// The course's tokenizer.json, given as the model, was "neither a
// PyTorch zip checkpoint nor a GGUF file (starts with "{\"ty")".
func TestOpenJSON(t *testing.T) {
	if _, err := Open(testmodels.Path(t, "course/tokenizer.json")); err == nil || !strings.HasSuffix(err.Error(), "tokenizer.json is a JSON file, not a model: give the .pt checkpoint or GGUF file") {
		t.Errorf("tokenizer.json: %v", err)
	}
}
