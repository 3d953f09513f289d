package convert

import (
	"fmt"
	"slices"
	"strings"

	"chat/models/gguf"
)

// FromGGUF describes an open GGUF file for re-quantisation, as
// llama-quantize --allow-requantize does it: the metadata as it is, every
// tensor from its stored bytes (dequantised only when SetTypes gives it
// another type).
func FromGGUF(src *gguf.File) (*File, error) {
	arch, ok := src.String("general.architecture")
	if !ok || arch == "" {
		return nil, fmt.Errorf("convert: the file names no general.architecture")
	}
	// A split model's part keys (split.no, split.count, ...) are left out:
	// what is written is one file, which would otherwise say it is a part.
	meta := slices.DeleteFunc(slices.Clone(src.KV), func(kv gguf.KV) bool { return strings.HasPrefix(kv.Key, "split.") })
	f := &File{Arch: arch, Meta: meta, Release: src.ReleaseBytes}
	for i := range src.Tensors {
		ti := &src.Tensors[i]
		raw, err := src.TensorData(ti)
		if err != nil {
			return nil, fmt.Errorf("convert: %w", err)
		}
		shape := make([]int, len(ti.Dims))
		for j, d := range ti.Dims {
			shape[len(ti.Dims)-1-j] = int(d)
		}
		t := Tensor{Name: ti.Name, Shape: shape, Raw: raw, Src: ti.Type}
		f.Tensors = append(f.Tensors, t)
	}
	return f, nil
}

// Check reports a tensor that must be re-encoded but whose stored type
// cannot be read (an IQ type), before anything is written.
func Check(f *File) error {
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Raw != nil && t.Type != t.Src && !gguf.CanDequantize(t.Src) {
			return fmt.Errorf("convert: %s is %s, which this app cannot read to re-encode as %s", t.Name, t.Src, t.Type)
		}
		if !gguf.CanQuantize(t.Type) {
			return fmt.Errorf("convert: %s: writing %s is not supported", t.Name, t.Type)
		}
	}
	return nil
}
