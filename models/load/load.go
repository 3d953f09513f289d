// Package load opens any model file the app supports, choosing the reader by
// the file's first bytes rather than its name, so a GGUF file named .pt (or
// the reverse) still opens or fails with a clear message.
package load

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"chat/models"
	"chat/models/course"
	"chat/models/embedded"
	"chat/models/llama"
	"chat/models/torchpt"
)

// Open loads the model at path.
func Open(path string) (models.Model, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open model: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("open model: %s is a directory, not a model file (.pt or .gguf)", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open model: %w", err)
	}
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	f.Close()
	switch {
	case n == 4 && string(magic[:]) == "GGUF":
		return llama.Load(path)
	case n >= 2 && magic[0] == 'P' && magic[1] == 'K':
		return course.Load(path)
	default:
		return nil, fmt.Errorf("open model: %s is neither a PyTorch zip checkpoint nor a GGUF file (starts with %q)", path, magic[:n])
	}
}

// Embedded loads the default model compiled into the binary.
func Embedded() (models.Model, error) {
	ck, err := torchpt.Read(bytes.NewReader(embedded.Model), int64(len(embedded.Model)), embedded.Name)
	if err != nil {
		return nil, err
	}
	return course.FromCheckpoint(ck, embedded.Name)
}
