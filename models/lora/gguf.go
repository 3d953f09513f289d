package lora

import (
	"fmt"
	"io"
	"strings"

	"chat/models/gguf"
	"chat/models/quote"
	"chat/models/weights"
)

// A llama.cpp LoRA adapter is a GGUF file with general.type = "adapter",
// adapter.type = "lora", adapter.lora.alpha and, for each changed tensor
// NAME, NAME.lora_a (ggml dims [in, r]: row-major [r][in]) and NAME.lora_b
// ([r, out]: [out][r]) — what llama.cpp's convert_lora_to_gguf.py writes
// and llama_adapter_lora_init reads (src/llama-adapter.cpp).

func loadGGUF(path string) (*Adapter, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	defer f.Close()
	if t, _ := f.String("general.type"); t != "adapter" {
		return nil, fmt.Errorf("lora: %s is a GGUF file but not an adapter (general.type %s)", path, quote.Quote(t))
	}
	if t, _ := f.String("adapter.type"); t != "lora" {
		return nil, fmt.Errorf("lora: %s is a %s adapter, not lora", path, quote.Quote(t))
	}
	alpha, _ := f.Float("adapter.lora.alpha")
	arch, _ := f.String("general.architecture")
	// A Q2_K matrix is 12 times its size in the file as float32.
	var elems float64
	for i := range f.Tensors {
		elems += float64(f.Tensors[i].Elements())
	}
	if err := fits(path, elems); err != nil {
		return nil, err
	}
	as, bs := map[string]*weights.F32{}, map[string]*weights.F32{}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		target, ab := "", ""
		switch {
		case strings.HasSuffix(ti.Name, ".lora_a"):
			target, ab = strings.TrimSuffix(ti.Name, ".lora_a"), "a"
		case strings.HasSuffix(ti.Name, ".lora_b"):
			target, ab = strings.TrimSuffix(ti.Name, ".lora_b"), "b"
		default:
			return nil, fmt.Errorf("lora: %s: tensor %s is not a lora_a or lora_b", path, quote.Quote(ti.Name))
		}
		if len(ti.Dims) != 2 || ti.Dims[0] == 0 || ti.Dims[1] == 0 {
			return nil, fmt.Errorf("lora: %s: %s has shape %v, want a matrix", path, quote.Quote(ti.Name), ti.Dims)
		}
		v, err := f.TensorFloat32(ti.Name)
		if err != nil {
			return nil, fmt.Errorf("lora: %s: %w", path, err)
		}
		if ti.Type == gguf.TypeF32 {
			v = append([]float32(nil), v...) // a view of the mapping, which closes below
		}
		m := weights.NewF32(v, int(ti.Dims[1]), int(ti.Dims[0]))
		if ab == "a" {
			as[target] = m
		} else {
			bs[target] = m
		}
	}
	ps, err := pairs(path, as, bs, func(string) float64 { return alpha }, false)
	if err != nil {
		return nil, err
	}
	return &Adapter{Format: "gguf", Base: arch, Pairs: ps}, nil
}

// WriteGGUF writes a as a llama.cpp GGUF adapter for architecture arch, its
// targets taken as llama.cpp tensor names, in float32.
func WriteGGUF(w io.Writer, a *Adapter, arch string, alpha float64) error {
	meta := []gguf.KV{
		{Key: "general.architecture", Type: gguf.String, Value: arch},
		{Key: "general.type", Type: gguf.String, Value: "adapter"},
		{Key: "adapter.type", Type: gguf.String, Value: "lora"},
		{Key: "adapter.lora.alpha", Type: gguf.Float32, Value: float32(alpha)},
	}
	var ts []gguf.WriteTensor
	for _, p := range a.Pairs {
		ts = append(ts,
			gguf.WriteTensor{Name: p.Target + ".lora_a", Dims: []int64{int64(p.A.Cols()), int64(p.A.Rows())}, Type: gguf.TypeF32, Data: p.A.Floats()},
			gguf.WriteTensor{Name: p.Target + ".lora_b", Dims: []int64{int64(p.B.Cols()), int64(p.B.Rows())}, Type: gguf.TypeF32, Data: p.B.Floats()})
	}
	return gguf.Write(w, meta, ts)
}
