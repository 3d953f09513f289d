package lora

import (
	"fmt"
	"path/filepath"
	"strings"

	"chat/models"
	"chat/models/convert"
	"chat/models/course"
	"chat/models/llama"
	"chat/models/nn"
	"chat/models/weights"
)

// MergedFile is m with ads merged (W' = W + scale·B·A), described as a GGUF
// file (chat merge-lora): a course checkpoint as chat convert writes it
// (float32 unless a mix is chosen), a GGUF model as its own file with the
// changed matrices replaced and re-encoded in their stored types, as
// llama.cpp's export-lora does. The tensors' types are set (KeepTypes).
func MergedFile(m models.Model, ads []*Adapter) (*convert.File, error) {
	merged, err := Merge(m, ads)
	if err != nil {
		return nil, err
	}
	switch mm := merged.(type) {
	case *course.Model:
		f, err := convert.FromCourse(mm, strings.TrimSuffix(mm.Info().Name, filepath.Ext(mm.Info().Name))+"+lora")
		if err != nil {
			return nil, err
		}
		convert.KeepTypes(f)
		return f, nil
	case *llama.Model:
		f, err := convert.FromGGUF(mm.GGUF())
		if err != nil {
			return nil, err
		}
		orig := map[string]weights.Linear{}
		for _, t := range nn.Tensors(m.(variant).Arch(), "gguf") {
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
		if len(changed) > 0 {
			return nil, fmt.Errorf("lora: merged matrices that are not tensors of the file (a fused attn_qkv?)")
		}
		convert.KeepTypes(f)
		return f, nil
	}
	return nil, fmt.Errorf("lora: %s cannot be written merged", m.Info().Name)
}
