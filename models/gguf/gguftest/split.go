// Package gguftest has helpers for tests that need GGUF files of a
// particular shape.
package gguftest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"chat/models/gguf"
)

// Split writes the GGUF file at path as llama.cpp's gguf-split does, into
// parts files in dir (every metadata key in the first; split.no,
// split.count and split.tensors.count in each; the tensors in order, about
// as many in each part), and returns the parts' paths.
func Split(t testing.TB, path, dir string, parts int) []string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	name := filepath.Join(dir, strings.TrimSuffix(filepath.Base(path), ".gguf"))
	var paths []string
	per := (len(f.Tensors) + parts - 1) / parts
	for i := range parts {
		meta := []gguf.KV{}
		if i == 0 {
			meta = append(meta, f.KV...)
		}
		meta = append(meta,
			gguf.KV{Key: "split.no", Type: gguf.Uint16, Value: uint16(i)},
			gguf.KV{Key: "split.count", Type: gguf.Uint16, Value: uint16(parts)},
			gguf.KV{Key: "split.tensors.count", Type: gguf.Int32, Value: int32(len(f.Tensors))})
		var ts []gguf.WriteTensor
		for _, ti := range f.Tensors[min(i*per, len(f.Tensors)):min((i+1)*per, len(f.Tensors))] {
			raw, err := f.TensorData(&ti)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Raw: raw})
		}
		p := fmt.Sprintf("%s-%05d-of-%05d.gguf", name, i+1, parts)
		out, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := gguf.Write(out, meta, ts); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// WithMeta writes the GGUF file at path to out with the metadata edit
// returns for its own, and the same tensors.
func WithMeta(t testing.TB, path, out string, edit func([]gguf.KV) []gguf.KV) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []gguf.WriteTensor
	for _, ti := range f.Tensors {
		raw, err := f.TensorData(&ti)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Raw: raw})
	}
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(w, edit(append([]gguf.KV(nil), f.KV...)), ts); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
