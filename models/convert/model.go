package convert

import (
	"fmt"
	"path/filepath"
	"strings"

	"chat/models"
	"chat/models/course"
	"chat/models/llama"
	"chat/models/nn"
	"chat/models/weights"
)

// FromModel describes m, a variant of base (the same model with some
// matrices changed: adapters merged, weights pruned), as a GGUF file with
// its types set (KeepTypes): a course checkpoint as chat convert writes it,
// a GGUF model as its own file with the changed matrices replaced and
// re-encoded in their stored types, as llama.cpp's export-lora does. suffix
// is added to a checkpoint's general.name ("+lora", "+pruned").
func FromModel(m, base models.Model, suffix string) (*File, error) {
	switch mm := m.(type) {
	case *course.Model:
		f, err := FromCourse(mm, strings.TrimSuffix(mm.Info().Name, filepath.Ext(mm.Info().Name))+suffix)
		if err != nil {
			return nil, err
		}
		KeepTypes(f)
		return f, nil
	case *llama.Model:
		b, ok := base.(*llama.Model)
		if !ok {
			return nil, fmt.Errorf("convert: %s is not a variant of %s", m.Info().Name, base.Info().Name)
		}
		f, err := FromGGUF(mm.GGUF())
		if err != nil {
			return nil, err
		}
		orig := map[string]weights.Linear{}
		for _, t := range nn.Tensors(b.Arch(), "gguf") {
			orig[t.Name] = t.Linear
		}
		changed := map[string][]float32{}
		for _, t := range nn.Tensors(mm.Arch(), "gguf") {
			if t.Linear != nil && t.Linear != orig[t.Name] {
				changed[t.Name] = weights.Dequantize(t.Linear)
			}
		}
		for i := range f.Tensors {
			if v, ok := changed[f.Tensors[i].Name]; ok {
				f.Tensors[i].Raw, f.Tensors[i].Data = nil, v
				delete(changed, f.Tensors[i].Name)
			}
		}
		// A matrix the file holds under another name (a tied output layer
		// is token_embd) that changed alone is untied: it gets a tensor of
		// its own, of the same type, which llama.cpp reads before the tie.
		for i, n := 0, len(f.Tensors); i < n; i++ {
			for name, v := range changed {
				if t := f.Tensors[i]; orig[name] != nil && orig[name] == orig[t.Name] {
					f.Tensors = append(f.Tensors, Tensor{Name: name, Shape: t.Shape, Data: v, Src: t.Src})
					delete(changed, name)
				}
			}
		}
		if len(changed) > 0 {
			return nil, fmt.Errorf("convert: changed matrices that are not tensors of the file (parts of a fused attn_qkv?)")
		}
		KeepTypes(f)
		return f, nil
	}
	return nil, fmt.Errorf("convert: %s cannot be written as GGUF", m.Info().Name)
}
