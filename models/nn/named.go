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

// Blocks groups arch's weight matrices that Convert re-encodes (as Linears
// lists them) by the element of the architecture's list of blocks they
// belong to, in order; matrices outside the blocks come as groups of one.
// A block's matrices see inputs computed by the blocks before it only, which
// is what layer-by-layer calibration (SparseGPT) relies on.
func Blocks(arch Arch) [][]weights.Linear {
	var groups [][]weights.Linear
	seen := map[weights.Linear]bool{}
	collect := func(v reflect.Value, keep bool) []weights.Linear {
		var out []weights.Linear
		m := mapper{fn: func(_ string, k bool, l weights.Linear) (weights.Linear, error) {
			if !k && !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
			return l, nil
		}}
		_, _ = m.value(v, keep, "", "")
		return out
	}
	v := reflect.ValueOf(arch).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv, keep := v.Field(i), fieldOpts(f).keep
		if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
			for j := 0; j < fv.Len(); j++ {
				if g := collect(fv.Index(j), keep); len(g) > 0 {
					groups = append(groups, g)
				}
			}
			continue
		}
		for _, l := range collect(fv, keep) {
			groups = append(groups, []weights.Linear{l})
		}
	}
	return groups
}
