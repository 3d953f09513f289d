package load

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"chat/models/gguf"
	"chat/models/testmodels"
)

// tinyGGUF writes a one-layer llama GGUF (dim 8, vocabulary of the 256 byte
// tokens and 3 controls) with the metadata values in over replacing the
// real ones, and returns its path.
func tinyGGUF(t *testing.T, over map[string]uint32) string {
	t.Helper()
	return tinyGGUFTokens(t, over, 0)
}

// tinyGGUFTokens is tinyGGUF with extra ordinary tokens in the vocabulary
// that the embedding does not have.
func tinyGGUFTokens(t *testing.T, over map[string]uint32, extra int) string {
	t.Helper()
	return tinyGGUFMeta(t, over, extra)
}

// tinyGGUFMeta is tinyGGUFTokens with more metadata entries after the
// hyperparameters.
func tinyGGUFMeta(t *testing.T, over map[string]uint32, extra int, more ...gguf.KV) string {
	t.Helper()
	const dim, ffn, heads = 8, 16, 2
	hp := map[string]uint32{"embedding_length": dim, "block_count": 1, "feed_forward_length": ffn,
		"attention.head_count": heads, "context_length": 32}
	for k, v := range over {
		hp[k] = v
	}
	meta := []gguf.KV{
		{Key: "general.architecture", Type: gguf.String, Value: "llama"},
		{Key: "general.name", Type: gguf.String, Value: "tiny"},
		{Key: "llama.attention.layer_norm_rms_epsilon", Type: gguf.Float32, Value: float32(1e-5)},
	}
	for _, k := range []string{"embedding_length", "block_count", "feed_forward_length", "attention.head_count",
		"context_length", "attention.head_count_kv", "attention.key_length", "rope.dimension_count"} {
		if v, ok := hp[k]; ok {
			meta = append(meta, gguf.KV{Key: "llama." + k, Type: gguf.Uint32, Value: v})
		}
	}
	meta = append(meta, more...)
	toks := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	for b := 0; b < 256; b++ {
		toks = append(toks, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	rows := int64(len(toks))
	for i := 0; i < extra; i++ {
		toks = append(toks, fmt.Sprintf("t%d", i))
		types = append(types, 1)
	}
	meta = append(meta,
		gguf.KV{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "llama"},
		gguf.KV{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: toks}},
		gguf.KV{Key: "tokenizer.ggml.scores", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Float32, Data: make([]float32, len(toks))}},
		gguf.KV{Key: "tokenizer.ggml.token_type", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Int32, Data: types}},
		gguf.KV{Key: "tokenizer.ggml.bos_token_id", Type: gguf.Uint32, Value: uint32(1)},
		gguf.KV{Key: "tokenizer.ggml.eos_token_id", Type: gguf.Uint32, Value: uint32(2)})
	var ts []gguf.WriteTensor
	add := func(name string, dims ...int64) {
		n := int64(1)
		for _, d := range dims {
			n *= d
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%7) * 0.01
		}
		ts = append(ts, gguf.WriteTensor{Name: name, Dims: dims, Type: gguf.TypeF32, Data: x})
	}
	add("token_embd.weight", dim, rows)
	add("output_norm.weight", dim)
	for _, n := range []string{"attn_norm", "ffn_norm"} {
		add("blk.0."+n+".weight", dim)
	}
	for _, n := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
		add("blk.0."+n+".weight", dim, dim)
	}
	add("blk.0.ffn_gate.weight", dim, ffn)
	add("blk.0.ffn_up.weight", dim, ffn)
	add("blk.0.ffn_down.weight", ffn, dim)
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := gguf.Write(f, meta, ts); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue 16: every hyperparameter is checked against the tensors in the file
// before anything is allocated for it. block_count = 16777216 in a small
// file once allocated 13 GB.
func TestHostileHyperparameters(t *testing.T) {
	if _, err := Open(tinyGGUF(t, nil)); err != nil {
		t.Fatalf("the untouched tiny model does not load: %v", err)
	}
	const big = 1 << 24
	for _, k := range []string{"block_count", "embedding_length", "feed_forward_length", "attention.head_count",
		"attention.head_count_kv", "attention.key_length", "rope.dimension_count", "context_length"} {
		t.Run(k, func(t *testing.T) {
			path := tinyGGUF(t, map[string]uint32{k: big})
			err := testmodels.Bounded(t, k, func() error {
				m, err := Open(path)
				if c, ok := m.(interface{ Close() error }); ok {
					c.Close()
				}
				return err
			})
			if k == "context_length" {
				if err != nil {
					t.Fatalf("a long context is allowed (capped at load): %v", err)
				}
				return
			}
			if err == nil || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line", err)
			}
		})
	}
}

// Rope factors that pass the range checks but overflow float32 once
// inverted or multiplied are refused at load: the model loaded, and its
// first token failed with "no finite logit to sample from".
func TestHostileRopeFactors(t *testing.T) {
	f32 := func(k string, v float32) gguf.KV { return gguf.KV{Key: "llama." + k, Type: gguf.Float32, Value: v} }
	yarn := gguf.KV{Key: "llama.rope.scaling.type", Type: gguf.String, Value: "yarn"}
	for _, c := range []struct {
		name string
		meta []gguf.KV
	}{
		{"tiny factor", []gguf.KV{f32("rope.scaling.factor", 1e-45)}},
		{"yarn tiny factor", []gguf.KV{yarn, f32("rope.scaling.factor", 1e-45)}},
		{"yarn factor e^-10", []gguf.KV{yarn, f32("rope.scaling.factor", float32(math.Exp(-10)))}},
		{"attn_factor Inf", []gguf.KV{f32("rope.scaling.attn_factor", float32(math.Inf(1)))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(tinyGGUFMeta(t, nil, 0, c.meta...))
			if err == nil || !strings.Contains(err.Error(), "rope scaling factor") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line naming the rope scaling factor", err)
			}
		})
	}
	if _, err := Open(tinyGGUFMeta(t, nil, 0, yarn, f32("rope.scaling.factor", 4), f32("rope.scaling.attn_factor", 1.2))); err != nil {
		t.Fatalf("yarn factor 4, attn_factor 1.2: %v", err)
	}
}

// Issue 16: a vocabulary the embedding does not match is refused before a
// tokenizer is built from it: 4M short tokens over 259 embedding rows (an
// 87 MB file) took 650 MB to be refused. Opening may cost about the file's
// size (the parsed metadata), not the tokenizer's several times more.
func TestVocabLargerThanEmbedding(t *testing.T) {
	path := tinyGGUFTokens(t, nil, 1<<18)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Open(path)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "rows but the vocabulary") {
		t.Fatalf("error %v, want the vocabulary refused", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 2*uint64(st.Size()) {
		t.Errorf("allocated %d bytes to refuse a %d-byte file", n, st.Size())
	}
}

// Issue 16: a file's strings in an error (here an architecture and a
// tensor name of 1 MB) are cut, so that the error stays one short line.
func TestLongStringsCut(t *testing.T) {
	long := strings.Repeat("\x1bA", 1<<19)
	dir := t.TempDir()
	write := func(name string, meta []gguf.KV, tensorName string, cut int) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ts := []gguf.WriteTensor{{Name: tensorName, Dims: []int64{64}, Type: gguf.TypeF32, Data: make([]float32, 64)}}
		if err := gguf.Write(f, meta, ts); err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		f.Truncate(st.Size() - int64(cut))
		return path
	}
	for _, path := range []string{
		write("arch.gguf", []gguf.KV{{Key: "general.architecture", Type: gguf.String, Value: long}}, "w", 0),
		write("name.gguf", nil, long, 100),
	} {
		// 450 bytes: the 80 bytes shown escape to 200, and the unsupported
		// architecture's error lists the 13 supported ones.
		_, err := Open(path)
		if err == nil || len(err.Error()) > 450 || strings.Contains(err.Error(), "\x1b") {
			t.Errorf("%s: want one short line with the string escaped, got %d bytes: %.200q", filepath.Base(path), len(fmt.Sprint(err)), err)
		}
	}
}

// Issue 16: a FIFO or a device where a model is expected is refused at
// once instead of blocking (or reading without end).
func TestOpenOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.gguf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	zero := filepath.Join(dir, "zero.pt")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, zero, dir} {
		err := testmodels.Bounded(t, p, func() error {
			_, err := Open(p)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "not a regular file") && !strings.Contains(err.Error(), "directory") {
			t.Errorf("%s: %v", p, err)
		}
	}
}
