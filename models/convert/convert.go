// Package convert writes GGUF files llama.cpp runs: a course checkpoint as
// the llama.cpp architecture that computes what it computes (course.go),
// with the course tokenizer as a byte-level BPE vocabulary (vocab.go), and
// any GGUF file re-quantised (requant.go). Both choose each tensor's type
// the way llama-quantize does for the requested mix (types.go), so a course
// model converted with --type q4_k holds what convert_hf_to_gguf.py
// followed by llama-quantize Q4_K_M would write.
package convert

import (
	"fmt"
	"io"

	"chat/models/gguf"
)

// File is a GGUF file being written: metadata, then tensors.
type File struct {
	Arch    string // general.architecture
	Meta    []gguf.KV
	Tensors []Tensor

	// Release, when set, is told a tensor's Raw bytes once they have been
	// re-encoded (FromGGUF: gguf.File.ReleaseBytes), so that the pages of
	// the file read so far do not stay in memory beside the new encodings.
	Release func([]byte)
}

// Tensor is one tensor of a File.
type Tensor struct {
	Name  string
	Shape []int // row-major: [rows, cols] for a matrix, [n] for a vector

	// The values: Data as float32 (row-major), or Load, called once when
	// the tensor is written (a large file is not held in float32 at once),
	// or Raw bytes already in type Src (copied as they are when the type
	// rules keep Src).
	Data []float32
	Load func() ([]float32, error)
	Raw  []byte
	Src  gguf.Type

	Type gguf.Type // what is written; set by SetTypes
}

func (t *Tensor) elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// dims is the shape in ggml's order (fastest first).
func (t *Tensor) dims() []int64 {
	d := make([]int64, len(t.Shape))
	for i, s := range t.Shape {
		d[len(t.Shape)-1-i] = int64(s)
	}
	return d
}

// Progress is told how many of the file's elements have been encoded.
type Progress func(done, total int64)

// Write encodes every tensor in its Type and writes the file. Metadata
// general.architecture, general.file_type and general.quantization_version
// come first when f.Meta lacks them.
func Write(w io.Writer, f *File, mix Mix, progress Progress) error {
	var total, done int64
	for i := range f.Tensors {
		total += f.Tensors[i].elements()
	}
	out := make([]gguf.WriteTensor, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		raw, err := encode(t)
		if err != nil {
			return fmt.Errorf("convert: %s: %w", t.Name, err)
		}
		if f.Release != nil && t.Raw != nil && t.Type != t.Src {
			f.Release(t.Raw)
		}
		out[i] = gguf.WriteTensor{Name: t.Name, Dims: t.dims(), Type: t.Type, Raw: raw}
		done += t.elements()
		if progress != nil {
			progress(done, total)
		}
	}
	return gguf.Write(w, header(f, mix), out)
}

func encode(t *Tensor) ([]byte, error) {
	if t.Raw != nil && t.Type == t.Src {
		return t.Raw, nil
	}
	x := t.Data
	if x == nil && t.Load != nil {
		var err error
		if x, err = t.Load(); err != nil {
			return nil, err
		}
	}
	if x == nil && t.Raw != nil {
		x = make([]float32, t.elements())
		if err := gguf.Dequantize(t.Src, t.Raw, x); err != nil {
			return nil, err
		}
	}
	if int64(len(x)) != t.elements() {
		return nil, fmt.Errorf("%d values for shape %v", len(x), t.Shape)
	}
	return gguf.Quantize(t.Type, x)
}

// header is f.Meta with the architecture first and the file type of the mix.
func header(f *File, mix Mix) []gguf.KV {
	meta := []gguf.KV{{Key: "general.architecture", Type: gguf.String, Value: f.Arch}}
	for _, kv := range f.Meta {
		switch kv.Key {
		case "general.architecture", "general.file_type", "general.quantization_version":
			continue
		}
		meta = append(meta, kv)
	}
	meta = append(meta, gguf.KV{Key: "general.file_type", Type: gguf.Uint32, Value: mix.FileType})
	if mix.Default != gguf.TypeF32 && mix.Default != gguf.TypeF16 && mix.Default != gguf.TypeBF16 {
		meta = append(meta, gguf.KV{Key: "general.quantization_version", Type: gguf.Uint32, Value: uint32(2)})
	}
	return meta
}
