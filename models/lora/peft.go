package lora

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"chat/models/quote"
	"chat/models/regular"
	"chat/models/safetensors"
	"chat/models/weights"
)

// A PEFT adapter is a folder: adapter_config.json (r, lora_alpha, and the
// options that change the arithmetic) and adapter_model.safetensors, whose
// tensors are "base_model.model.<module>.lora_A.weight" [r][in] and
// "….lora_B.weight" [out][r]. A module's matrix is "<module>.weight".

// peftConfig is the part of adapter_config.json this package reads.
type peftConfig struct {
	PeftType     string             `json:"peft_type"`
	R            int                `json:"r"`
	Alpha        float64            `json:"lora_alpha"`
	RSLoRA       bool               `json:"use_rslora"`
	DoRA         bool               `json:"use_dora"`
	FanInFanOut  bool               `json:"fan_in_fan_out"`
	Base         string             `json:"base_model_name_or_path"`
	RankPattern  map[string]any     `json:"rank_pattern"`
	AlphaPattern map[string]float64 `json:"alpha_pattern"`
}

const peftPrefix = "base_model.model."

// maxPEFTConfig bounds adapter_config.json, a few hundred bytes in practice
// (it is read whole: /dev/zero there would never end).
const maxPEFTConfig = 1 << 20

// peftFiles are the two files of the PEFT folder dir.
func peftFiles(dir string) (config, tensors string) {
	return filepath.Join(dir, "adapter_config.json"), filepath.Join(dir, "adapter_model.safetensors")
}

func loadPEFT(dir string) (*Adapter, error) {
	configFile, tensorsFile := peftFiles(dir)
	cb, err := regular.ReadFile(configFile, maxPEFTConfig)
	if err != nil {
		return nil, fmt.Errorf("lora: a PEFT adapter needs adapter_config.json: %w", err)
	}
	var c peftConfig
	if err := json.Unmarshal(cb, &c); err != nil {
		return nil, fmt.Errorf("lora: %s/adapter_config.json: %w", dir, err)
	}
	switch {
	case c.PeftType != "" && c.PeftType != "LORA":
		return nil, fmt.Errorf("lora: %s is a %s adapter, not LORA", dir, quote.Quote(c.PeftType))
	case c.DoRA:
		return nil, fmt.Errorf("lora: %s uses DoRA (use_dora), which is not supported", dir)
	case c.FanInFanOut:
		return nil, fmt.Errorf("lora: %s stores fan_in_fan_out (GPT-2 Conv1D) weights, which are not supported", dir)
	}
	f, err := safetensors.Open(tensorsFile)
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	defer f.Close() // each matrix is copied out of the mapping
	var elems float64
	for _, t := range f.Tensors {
		elems += float64(t.Elements())
	}
	if err := fits(dir, elems); err != nil {
		return nil, err
	}
	as, bs := map[string]*weights.F32{}, map[string]*weights.F32{}
	for _, name := range f.Names() {
		module, ab, ok := peftName(name)
		if !ok {
			return nil, fmt.Errorf("lora: %s: tensor %s is not a LoRA A or B matrix (only lora_A/lora_B of linear layers are supported)", dir, quote.Quote(name))
		}
		m, err := matrix(name, f.Tensors[name])
		if err != nil {
			return nil, err
		}
		if ab == "A" {
			as[module+".weight"] = m
		} else {
			bs[module+".weight"] = m
		}
	}
	alpha := func(target string) float64 {
		module := strings.TrimSuffix(target, ".weight")
		for pat, a := range c.AlphaPattern { // PEFT matches a key against the module's name
			if module == pat || strings.HasSuffix(module, "."+pat) {
				return a
			}
		}
		return c.Alpha
	}
	ps, err := pairs(dir, as, bs, alpha, c.RSLoRA)
	if err != nil {
		return nil, err
	}
	if c.R > 0 && len(c.RankPattern) == 0 {
		for _, p := range ps {
			if p.Rank() != c.R {
				return nil, fmt.Errorf("lora: %s: %s has rank %d, adapter_config.json says r = %d", dir, quote.Quote(p.Target), p.Rank(), c.R)
			}
		}
	}
	return &Adapter{Format: "peft", Base: c.Base, Pairs: ps, files: []string{configFile, tensorsFile}}, nil
}

// peftName splits "base_model.model.<module>.lora_A.weight" (also with
// PEFT's adapter name, ".lora_A.default.weight").
func peftName(name string) (module, ab string, ok bool) {
	rest := strings.TrimPrefix(name, peftPrefix)
	for _, x := range []string{"A", "B"} {
		for _, suf := range []string{".lora_" + x + ".weight", ".lora_" + x + ".default.weight"} {
			if m, found := strings.CutSuffix(rest, suf); found {
				return m, x, true
			}
		}
	}
	return "", "", false
}

// matrix reads a 2-D float tensor.
func matrix(name string, t safetensors.Tensor) (*weights.F32, error) {
	if len(t.Shape) != 2 || t.Shape[0] == 0 || t.Shape[1] == 0 {
		return nil, fmt.Errorf("lora: tensor %s has shape %s, want a matrix", quote.Quote(name), quote.Cut(fmt.Sprint(t.Shape), quote.Max))
	}
	v, err := t.Float32()
	if err != nil {
		return nil, fmt.Errorf("lora: tensor %s: %w", quote.Quote(name), err)
	}
	return weights.NewF32(v, t.Shape[0], t.Shape[1]), nil
}

// WritePEFT writes a as a PEFT folder (what a course user's PEFT run would
// save): adapter_config.json and adapter_model.safetensors, targets taken
// as module paths.
func WritePEFT(dir string, a *Adapter, alpha float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tensors := map[string]safetensors.Tensor{}
	var modules []string
	r := 0
	for _, p := range a.Pairs {
		module := strings.TrimSuffix(p.Target, ".weight")
		modules = append(modules, module[strings.LastIndexByte(module, '.')+1:])
		tensors[peftPrefix+module+".lora_A.weight"] = safetensors.F32([]int{p.A.Rows(), p.A.Cols()}, p.A.Floats())
		tensors[peftPrefix+module+".lora_B.weight"] = safetensors.F32([]int{p.B.Rows(), p.B.Cols()}, p.B.Floats())
		r = p.Rank()
	}
	cfg := map[string]any{"peft_type": "LORA", "r": r, "lora_alpha": alpha, "target_modules": modules,
		"base_model_name_or_path": a.Base, "bias": "none", "fan_in_fan_out": false, "use_rslora": false}
	cb, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err // an alpha JSON cannot hold (NaN, infinity)
	}
	configFile, tensorsFile := peftFiles(dir)
	if err := os.WriteFile(configFile, cb, 0o644); err != nil {
		return err
	}
	w, err := os.Create(tensorsFile)
	if err != nil {
		return err
	}
	if err := safetensors.Write(w, tensors, map[string]string{"format": "pt"}); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
