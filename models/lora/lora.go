// Package lora reads LoRA adapters — Hugging Face PEFT folders
// (adapter_config.json + adapter_model.safetensors, peft.go) and llama.cpp's
// GGUF adapters (general.type = adapter, gguf.go) — and applies them to a
// loaded model without merging (weights.LoRA: W·x + scale·B·(A·x), several
// adapters at once, apply.go), or merges them into its weights (W' = W +
// scale·B·A). An adapter names the matrices it changes the way its format
// does: PEFT by module path (the course's "blocks.0.attn.q_proj", a Hugging
// Face Llama's "model.layers.0.self_attn.q_proj"), GGUF by llama.cpp tensor
// name ("blk.0.attn_q.weight"); apply.go finds each one among the model's
// bound matrices (nn.Tensors), so either kind fits a course checkpoint and
// the GGUF file chat convert makes of it.
package lora

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"chat/models/hugepage"
	"chat/models/quote"
	"chat/models/weights"
)

// available is the memory that can be had without swapping; tests set a
// small one.
var available = hugepage.Available

// fits refuses an adapter whose matrices, elems values in all, cannot be
// held as float32 (the form both loaders make of them): a sparse file
// declares gigabytes it does not store, so this is checked before any
// matrix is made.
func fits(path string, elems float64) error {
	need := 4 * elems
	if avail, ok := available(); ok && need > float64(avail) {
		return fmt.Errorf("lora: %s: its matrices take %.0f MB as float32, more than the %d MB of memory available", path, need/(1<<20), avail>>20)
	}
	return nil
}

// Adapter is a loaded adapter.
type Adapter struct {
	Name   string // the file or folder's base name
	Path   string
	Format string // "peft" or "gguf"
	Base   string // the model it was made for, as the file says (may be "")
	Scale  float64
	Pairs  []Pair // sorted by target

	files []string // what loadPEFT read (nil: Path alone)
}

// Files are the files a was read from (a PEFT folder's two), which a
// command's output must not replace.
func (a *Adapter) Files() []string {
	if a.files != nil {
		return a.files
	}
	return []string{a.Path}
}

// Pair is the update of one matrix: W + scale·B·A.
type Pair struct {
	Target string       // the matrix, named the way the adapter's format names it (see package doc)
	A, B   *weights.F32 // [rank][cols], [rows][rank]
	// Alpha over Rank is the adapter's own scale (PEFT's lora_alpha / r,
	// with rsLoRA alpha / √r; llama.cpp's adapter.lora.alpha / rank, or 1
	// when alpha is 0).
	Alpha float64
	RS    bool // rsLoRA: alpha / √rank
}

// Rank is the update's rank.
func (p Pair) Rank() int { return p.A.Rows() }

// scale is what B·A is multiplied by, the user's scale included.
func (p Pair) scale(user float64) float32 {
	r := float64(p.Rank())
	switch {
	case p.Alpha == 0:
		return float32(user)
	case p.RS:
		return float32(user * p.Alpha / math.Sqrt(r))
	}
	return float32(user * p.Alpha / r)
}

// Load reads an adapter: spec is FILE or FILE:SCALE (scale 1 by default),
// FILE a PEFT folder (or its adapter_model.safetensors) or a GGUF adapter.
func Load(spec string) (*Adapter, error) {
	path, scale := spec, 1.0
	if i := strings.LastIndexByte(spec, ':'); i > 0 {
		if v, err := strconv.ParseFloat(spec[i+1:], 64); err == nil {
			if _, serr := os.Stat(spec); serr != nil { // "a:1.5", unless a file has that name
				path, scale = spec[:i], v
			}
		}
	}
	if math.IsNaN(scale) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("lora: scale %v in %q", scale, spec)
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("lora: no adapter at %s: no such file or folder (an adapter is a PEFT folder or a llama.cpp GGUF LoRA file)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	var a *Adapter
	switch {
	case st.IsDir():
		a, err = loadPEFT(path)
	case strings.HasSuffix(path, ".safetensors"):
		a, err = loadPEFT(filepath.Dir(path))
	default:
		a, err = loadGGUF(path)
	}
	if err != nil {
		return nil, err
	}
	if len(a.Pairs) == 0 {
		return nil, fmt.Errorf("lora: %s holds no LoRA pairs", path)
	}
	a.Path, a.Name, a.Scale = path, filepath.Base(path), scale
	for _, p := range a.Pairs {
		s := float64(p.scale(scale))
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("lora: %s: scale %v times alpha %v over rank %d is %v as float32", spec, scale, p.Alpha, p.Rank(), s)
		}
		if b := math.Abs(s) * float64(p.Rank()) * maxAbs(p.A) * maxAbs(p.B); !(b <= maxUpdate) {
			return nil, fmt.Errorf("lora: %s at scale %v could add up to %.3g to a weight of %s (at most %g makes sense): give a smaller scale",
				a.Name, scale, b, quote.Quote(p.Target), float64(maxUpdate))
		}
	}
	return a, nil
}

// maxUpdate bounds what an adapter's scale·B·A may add to one weight: at
// most scale × rank × max|A| × max|B|. Trained weights are a few units at
// most, so an update past this is a scale typed wrong (1e30 loaded, then
// every reply ended in "no finite logit").
const maxUpdate = 1e6

// maxAbs is the largest magnitude in m.
func maxAbs(m *weights.F32) float64 {
	var mx float32
	for _, v := range m.Floats() {
		mx = max(mx, v, -v)
	}
	return float64(mx)
}

// pairs builds the pairs of an adapter from A and B matrices keyed by
// target, checking that every A has its B and that their shapes chain.
func pairs(file string, as, bs map[string]*weights.F32, alpha func(target string) float64, rs bool) ([]Pair, error) {
	var out []Pair
	for t, a := range as {
		b, ok := bs[t]
		if !ok {
			return nil, fmt.Errorf("lora: %s: %s has lora_a but no lora_b", file, quote.Quote(t))
		}
		if a.Rows() != b.Cols() {
			return nil, fmt.Errorf("lora: %s: %s: lora_a has rank %d, lora_b %d", file, quote.Quote(t), a.Rows(), b.Cols())
		}
		// A NaN or infinity here would only show as a model whose logits
		// are all NaN ("no finite logit to sample from"), or a merged file
		// of them.
		for i, m := range []*weights.F32{a, b} {
			if j := slices.IndexFunc(m.Floats(), notFinite); j >= 0 {
				return nil, fmt.Errorf("lora: %s: %s: %s holds %v (value %d)", file, quote.Quote(t), []string{"lora_a", "lora_b"}[i], m.Floats()[j], j)
			}
		}
		al := alpha(t)
		if math.IsNaN(al) || math.IsInf(al, 0) || math.Abs(al) > math.MaxFloat32 {
			return nil, fmt.Errorf("lora: %s: %s: alpha is %v", file, quote.Quote(t), al)
		}
		out = append(out, Pair{Target: t, A: a, B: b, Alpha: al, RS: rs})
	}
	for t := range bs {
		if _, ok := as[t]; !ok {
			return nil, fmt.Errorf("lora: %s: %s has lora_b but no lora_a", file, quote.Quote(t))
		}
	}
	sortPairs(out)
	return out, nil
}

func notFinite(v float32) bool { return math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) }

func sortPairs(p []Pair) {
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && p[j].Target < p[j-1].Target; j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}
