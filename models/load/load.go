// Package load opens any model file the app supports, choosing the reader by
// the file's first bytes rather than its name, so a GGUF file named .pt (or
// the reverse) still opens or fails with a clear message.
package load

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"chat/models"
	"chat/models/course"
	"chat/models/embedded"
	"chat/models/llama"
	"chat/models/regular"
	"chat/models/torchpt"
)

// Open loads the model at path.
func Open(path string) (models.Model, error) { return OpenProgress(path, nil) }

// Progress is told how many of the file's total bytes have been read.
type Progress func(done, total int64)

// OpenProgress is Open, telling progress (if not nil) how far reading the
// file has got, for a progress bar while a large model loads.
func OpenProgress(path string, progress Progress) (models.Model, error) {
	f, st, err := regular.Open(path)
	if err != nil {
		return nil, openError(path, err)
	}
	defer f.Close()
	var head [28]byte // llama2.c's header is the longest sniffed
	n, _ := io.ReadFull(f, head[:])
	magic := head[:min(n, 4)]
	size := st.Size()
	switch {
	case size == 0:
		return nil, fmt.Errorf("open model: %s is empty (0 bytes), not a model file", path)
	case string(magic) == "GGUF":
		if progress != nil {
			// The reader memory-maps the file; reading it through once first
			// pulls it into the page cache with a visible pace, and the
			// mapping then finds every page resident.
			if err := readThrough(f, size, progress); err != nil {
				return nil, fmt.Errorf("open model: %w", err)
			}
		}
		m, err := llama.Load(path)
		if err != nil {
			return nil, err // not a typed nil *llama.Model in the interface
		}
		return m, nil
	case len(magic) >= 2 && magic[0] == 'P' && magic[1] == 'K':
		var r io.ReaderAt = f
		if progress != nil {
			r = &countingReader{r: f, total: size, progress: progress}
		}
		ck, err := torchpt.Read(r, size, filepath.Base(path))
		if err != nil {
			return nil, err
		}
		if len(ck.Config) == 0 && hfStateDict(ck) {
			return nil, fmt.Errorf("open model: %s is a Hugging Face model's PyTorch weights, not a course checkpoint: %s", path, convertHint)
		}
		return course.FromCheckpoint(ck, filepath.Base(path))
	case n >= 9 && head[8] == '{' && binary.LittleEndian.Uint64(head[:8]) < uint64(size):
		return nil, fmt.Errorf("open model: %s is a safetensors file: %s", path, convertHint)
	case n == len(head) && llama2c(head):
		// karpathy's llama2.c checkpoints (stories15M.bin) come beside
		// GGUF conversions of the same model, as in ../shared/models.
		hint := "convert it to GGUF (llama.cpp's llama-convert-llama2c-to-ggml) and give that file"
		if g := strings.TrimSuffix(path, filepath.Ext(path)) + ".gguf"; g != path {
			if _, err := os.Stat(g); err == nil {
				hint = "the GGUF file beside it, " + g + ", is one chat runs"
			}
		}
		return nil, fmt.Errorf("open model: %s is a llama2.c checkpoint, which chat does not read: %s", path, hint)
	case n > 0 && head[0] == '{':
		// The course's tokenizer.json or a model's config.json, given for
		// the model beside it.
		return nil, fmt.Errorf("open model: %s is a JSON file, not a model: give the .pt checkpoint or GGUF file", path)
	default:
		return nil, fmt.Errorf("open model: %s is neither a PyTorch zip checkpoint nor a GGUF file (starts with %q)", path, magic)
	}
}

// llama2c reports whether head is a llama2.c checkpoint's header: seven
// int32s (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
// negative for an unshared classifier, and seq_len), each in a sane range.
func llama2c(head [28]byte) bool {
	var v [7]int32
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(head[4*i:]))
	}
	dim, hidden, layers, heads, kvHeads, vocab, seq := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	if vocab < 0 {
		vocab = -vocab
	}
	in := func(x, hi int32) bool { return x >= 1 && x <= hi }
	return in(dim, 1<<16) && in(hidden, 1<<18) && in(layers, 1<<10) && in(heads, 1<<10) &&
		in(kvHeads, heads) && dim%heads == 0 && heads%kvHeads == 0 && in(vocab, 1<<20) && in(seq, 1<<20)
}

// convertHint says what to do with a Hugging Face model.
const convertHint = "convert the model to GGUF (llama.cpp's convert_hf_to_gguf.py) and give that file"

// hfStateDict reports whether a checkpoint without a config is a Hugging
// Face model's state dict (pytorch_model.bin), by its tensor names, which
// the course's model would report as a missing token_embed.weight.
func hfStateDict(ck *torchpt.Checkpoint) bool {
	for name := range ck.Tensors {
		// Not lm_head., which course models have too; GPT-2's
		// transformer.h. and .wte. arrive as h. and wte. (torchpt strips
		// transformer. as the course's chat loader does).
		for _, p := range []string{"model.layers.", "model.embed_tokens.", "model.decoder.", "h.", "wte.", "gpt_neox."} {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
	}
	return false
}

// openError says why path cannot be opened as a model in one line, and
// what to give instead: a name that is not a file (ollama's habit of naming
// models), a Hugging Face folder of safetensors, a folder holding model
// files.
func openError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		// ollama's habit, the name without its extension, beside the file
		// (`chat run stories260K` in its folder).
		for _, ext := range []string{".gguf", ".pt"} {
			if st, err := os.Stat(path + ext); err == nil && st.Mode().IsRegular() {
				return fmt.Errorf("open model: %s: no such file (did you mean %s?)", path, path+ext)
			}
		}
		if g := inShared(filepath.Base(path)); g != "" {
			return fmt.Errorf("open model: %s: no such file (did you mean %s?)", path, g)
		}
		return fmt.Errorf("open model: %s: no such file (a model is the path of a GGUF or .pt file; none is downloaded by name)", path)
	}
	st, serr := os.Stat(path)
	if serr != nil || !st.IsDir() {
		return fmt.Errorf("open model: %w", err)
	}
	var found []string
	safetensors := false
	entries, _ := os.ReadDir(path)
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".safetensors":
			safetensors = true
		case ".gguf", ".pt":
			found = append(found, e.Name())
		}
	}
	switch {
	case len(found) > 0:
		if len(found) > 3 {
			found = append(found[:3], "...")
		}
		return fmt.Errorf("open model: %s is a directory: give one of its model files (%s)", path, strings.Join(found, ", "))
	case safetensors:
		return fmt.Errorf("open model: %s is a folder of safetensors weights (a Hugging Face model): %s", path, convertHint)
	}
	return fmt.Errorf("open model: %s is a directory, not a model file (a GGUF or .pt file)", path)
}

// inShared is a model file named base (or base.gguf, base.pt) in the
// shared models folder ($CHAT_SHARED_MODELS, or ../shared/models from here)
// or one of its subfolders, "" when there is none: the course's and the
// README's files are there, and a name alone (chat -m stories260K.gguf)
// is what a user types first.
func inShared(base string) string {
	base = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`).Replace(base) // the name's own, not patterns
	for _, d := range SharedDirs() {
		for _, pat := range []string{base, "*" + string(filepath.Separator) + base} {
			for _, ext := range []string{"", ".gguf", ".pt"} {
				found, _ := filepath.Glob(filepath.Join(d, pat+ext))
				for _, f := range found {
					if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
						return f
					}
				}
			}
		}
	}
	return ""
}

// SharedDirs are where the shared models folder may be, in order:
// $CHAT_SHARED_MODELS when set, then ../shared/models from the working
// folder (where the course's and the README's files sit beside a checkout).
func SharedDirs() []string {
	var dirs []string
	if d := os.Getenv("CHAT_SHARED_MODELS"); d != "" {
		dirs = append(dirs, d)
	}
	return append(dirs, filepath.Join("..", "shared", "models"))
}

// countingReader reports the bytes read through it (the checkpoint reader
// reads each tensor's storage once).
type countingReader struct {
	r        io.ReaderAt
	done     int64
	total    int64
	progress Progress
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.done = min(c.done+int64(n), c.total)
	c.progress(c.done, c.total)
	return n, err
}

func readThrough(f *os.File, size int64, progress Progress) error {
	buf := make([]byte, 4<<20)
	var done int64
	for done < size {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-done)], done)
		done += int64(n)
		progress(done, size)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
	return nil
}

// Embedded loads the default model compiled into the binary.
func Embedded() (models.Model, error) {
	ck, err := torchpt.Read(bytes.NewReader(embedded.Model), int64(len(embedded.Model)), embedded.Name)
	if err != nil {
		return nil, err
	}
	return course.FromCheckpoint(ck, embedded.Name)
}
