package nn

import (
	"reflect"

	"chat/models/weights"
)

// Named access to an architecture's bound tensors, by the names their tags
// give under one key ("pt" for the course's names, "gguf" for llama.cpp's):
// the names a file holds them under. Converters walk them to write another
// format (models/convert), and adapters find the matrices they change by
// them (models/lora).

// Tensor is one bound tensor of an architecture.
type Tensor struct {
	Name   string         // "blocks.0.attn.q_proj.weight", "blk.0.attn_q.weight"
	Linear weights.Linear // a matrix, or nil
	Floats []float32      // a vector, or nil
	Keep   bool           // tagged "keep": an embedding or output layer
}

// Tensors lists arch's tensors bound under tag key, in field order. A
// matrix held by two tagged fields (a tied embedding) is listed under both
// names; matrices without a tag of key (made at load, such as the course's
// stacked per-head projections) are not listed.
func Tensors(arch Arch, key string) []Tensor {
	var out []Tensor
	m := mapper{key: key,
		fn: func(name string, keep bool, l weights.Linear) (weights.Linear, error) {
			if name != "" {
				out = append(out, Tensor{Name: name, Linear: l, Keep: keep})
			}
			return l, nil
		},
		vec: func(name string, w []float32) { out = append(out, Tensor{Name: name, Floats: w}) },
	}
	_, _ = m.value(reflect.ValueOf(arch).Elem(), false, "", "")
	return out
}

// MapLinears returns a copy of arch in which every matrix bound under tag
// key is replaced by fn(name, l) (return l to keep it), kept matrices
// included; arch is not changed. Untagged matrices are left as they are.
func MapLinears(arch Arch, key string, fn func(name string, l weights.Linear) (weights.Linear, error)) (Arch, error) {
	return mapArch(arch, key, func(name string, _ bool, l weights.Linear) (weights.Linear, error) {
		if name == "" {
			return l, nil
		}
		return fn(name, l)
	})
}
