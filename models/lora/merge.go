package lora

import (
	"chat/models"
	"chat/models/convert"
)

// MergedFile is m with ads merged (W' = W + scale·B·A), described as a GGUF
// file (chat merge-lora; see convert.FromModel).
func MergedFile(m models.Model, ads []*Adapter) (*convert.File, error) {
	merged, err := Merge(m, ads)
	if err != nil {
		return nil, err
	}
	return convert.FromModel(merged, m, "+lora")
}
