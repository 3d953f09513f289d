package lora

import (
	"fmt"
	"sort"
	"strings"

	"chat/models"
	"chat/models/convert"
	"chat/models/course"
	"chat/models/llama"
	"chat/models/nn"
	"chat/models/quote"
	"chat/models/weights"
)

// variant is a model whose weights can be swapped for a variant of them
// (course.Model and llama.Model).
type variant interface {
	models.Model
	Arch() nn.Arch
	WithArch(nn.Arch) models.Model
}

// target is one of the model's matrices an adapter may name, and how its
// update must be laid out to fit it.
type target struct {
	name string // the model's own name for it (under its tag key)
	// pair/unpair: B's rows are reordered from split-half heads to adjacent
	// pairs (or back), because the model and the adapter's name space
	// disagree on the rope layout of Q and K (see convert.PairRows).
	pair, unpair bool
	head         int
	rows, cols   int // the matrix's shape, which the update must fit
}

// index maps every name an adapter may use for one of m's matrices — its
// own, the course's, llama.cpp's, Hugging Face's — to the matrix.
func index(m variant) (key string, idx map[string]target, err error) {
	arch := m.Arch()
	idx = map[string]target{}
	add := func(alias string, t target) {
		if alias != "" {
			if _, dup := idx[alias]; !dup {
				idx[alias] = t
			}
		}
	}
	switch mm := m.(type) {
	case *course.Model:
		key = "pt"
		c := mm.Config()
		ggufArch, _ := convert.CourseArch(c)
		for _, t := range nn.Tensors(arch, key) {
			if t.Linear == nil {
				continue
			}
			rows, cols := t.Linear.Rows(), t.Linear.Cols()
			add(t.Name, target{name: t.Name, rows: rows, cols: cols})
			// A llama.cpp adapter made for the converted file is laid out
			// as it (Q and K rows paired for llama).
			qk := isQK(convert.GGUFName(t.Name))
			add("gguf:"+convert.GGUFName(t.Name), target{name: t.Name, unpair: qk && ggufArch == "llama", head: c.HeadDim, rows: rows, cols: cols})
		}
	case *llama.Model:
		key = "gguf"
		c := mm.Config()
		for _, t := range nn.Tensors(arch, key) {
			if t.Linear == nil {
				continue
			}
			if _, inFile := mm.GGUF().Tensor(t.Name); !inFile {
				continue // the output layer of a tied model is token_embd, as in llama.cpp
			}
			rows, cols := t.Linear.Rows(), t.Linear.Cols()
			add("gguf:"+t.Name, target{name: t.Name, rows: rows, cols: cols})
			// PEFT adapters name Hugging Face modules (or the course's, for
			// a converted checkpoint), whose Q and K rows are in split
			// halves where a GGUF with rope on adjacent pairs (llama,
			// granite, smollm3: the converter permutes them) pairs them.
			pair := isQK(t.Name) && !c.NeoX
			add(hfName(t.Name), target{name: t.Name, pair: pair, head: c.HeadDim, rows: rows, cols: cols})
			add(convert.CourseName(t.Name), target{name: t.Name, pair: pair, head: c.HeadDim, rows: rows, cols: cols})
		}
	default:
		return "", nil, fmt.Errorf("lora: %s: adapters apply to course checkpoints and GGUF models", m.Info().Name)
	}
	return key, idx, nil
}

func isQK(ggufName string) bool {
	return strings.HasSuffix(ggufName, ".attn_q.weight") || strings.HasSuffix(ggufName, ".attn_k.weight")
}

// hfBlock maps llama.cpp block tensor names to Hugging Face Llama-family
// module names (convert_hf_to_gguf.py's table, the parts these
// architectures have).
var hfBlock = map[string]string{
	"attn_q.weight":      "self_attn.q_proj.weight",
	"attn_k.weight":      "self_attn.k_proj.weight",
	"attn_v.weight":      "self_attn.v_proj.weight",
	"attn_output.weight": "self_attn.o_proj.weight",
	"ffn_gate.weight":    "mlp.gate_proj.weight",
	"ffn_up.weight":      "mlp.up_proj.weight",
	"ffn_down.weight":    "mlp.down_proj.weight",
}

func hfName(ggufName string) string {
	if ggufName == "output.weight" {
		return "lm_head.weight"
	}
	rest, ok := strings.CutPrefix(ggufName, "blk.")
	if !ok {
		return ""
	}
	num, tail, _ := strings.Cut(rest, ".")
	if hfBlock[tail] == "" {
		return ""
	}
	return "model.layers." + num + "." + hfBlock[tail]
}

// updates resolves ads against m: the update of each of m's matrices, by
// the model's name for it.
func updates(m variant, ads []*Adapter) (string, map[string][]weights.Update, error) {
	key, idx, err := index(m)
	if err != nil {
		return "", nil, err
	}
	out := map[string][]weights.Update{}
	for _, a := range ads {
		for _, p := range a.Pairs {
			lookup := p.Target
			if a.Format == "gguf" {
				lookup = "gguf:" + p.Target
			}
			t, ok := idx[lookup]
			if !ok {
				return "", nil, fmt.Errorf("lora: %s changes %s, which %s does not have (its matrices: %s)", a.Name, quote.Quote(p.Target), m.Info().Name, someNames(idx, a.Format))
			}
			// Checked before B's rows are reordered by heads: an adapter
			// made for another model has rows that are not whole heads.
			if p.A.Cols() != t.cols || p.B.Rows() != t.rows {
				return "", nil, fmt.Errorf("lora: %s: its update of %s, [%d][%d], does not fit the [%d][%d] matrix of %s (an adapter for another model?)",
					a.Name, quote.Quote(p.Target), p.B.Rows(), p.A.Cols(), t.rows, t.cols, m.Info().Name)
			}
			b := p.B
			switch {
			case t.pair:
				b = weights.NewF32(convert.PairRows(b.Floats(), b.Cols(), t.head), b.Rows(), b.Cols())
			case t.unpair:
				b = weights.NewF32(convert.UnpairRows(b.Floats(), b.Cols(), t.head), b.Rows(), b.Cols())
			}
			out[t.name] = append(out[t.name], weights.Update{A: p.A, B: b, Scale: p.scale(a.Scale)})
		}
	}
	return key, out, nil
}

// someNames lists a few names of idx an adapter of format could use.
func someNames(idx map[string]target, format string) string {
	var names []string
	for n := range idx {
		if strings.HasPrefix(n, "gguf:") == (format == "gguf") {
			names = append(names, strings.TrimPrefix(n, "gguf:"))
		}
	}
	sort.Strings(names)
	if len(names) > 4 {
		names = append(names[:4], "...")
	}
	return strings.Join(names, ", ")
}

// Apply returns m with ads applied at run time (weights.LoRA wrappers; the
// base matrices are shared, not copied). Every matrix an adapter names
// must be in m, with the shape the adapter expects.
func Apply(m models.Model, ads []*Adapter) (models.Model, error) {
	return rebuild(m, ads, func(l weights.Linear, ups []weights.Update) (weights.Linear, error) {
		return weights.NewLoRA(l, ups...)
	})
}

// Merge returns m with ads merged into float32 matrices: W' = W + Σ
// scale·B·A (from the dequantised base, so the merged matrices are float32).
func Merge(m models.Model, ads []*Adapter) (models.Model, error) {
	return rebuild(m, ads, func(l weights.Linear, ups []weights.Update) (weights.Linear, error) {
		lo, err := weights.NewLoRA(l, ups...)
		if err != nil {
			return nil, err
		}
		return weights.NewF32(weights.Dequantize(lo), l.Rows(), l.Cols()), nil
	})
}

func rebuild(m models.Model, ads []*Adapter, fn func(weights.Linear, []weights.Update) (weights.Linear, error)) (models.Model, error) {
	if len(ads) == 0 {
		return m, nil
	}
	v, ok := m.(variant)
	if !ok {
		return nil, fmt.Errorf("lora: %s: adapters apply to course checkpoints and GGUF models", m.Info().Name)
	}
	key, ups, err := updates(v, ads)
	if err != nil {
		return nil, err
	}
	arch, err := nn.MapLinears(v.Arch(), key, func(name string, l weights.Linear) (weights.Linear, error) {
		u := ups[name]
		if len(u) == 0 {
			return l, nil
		}
		if strings.Contains(name, "embed") || name == "token_embd.weight" {
			return nil, fmt.Errorf("lora: adapters on the token embedding (%s) are not supported", name)
		}
		w, err := fn(l, u)
		if err != nil {
			return nil, fmt.Errorf("lora: %s: %w", name, err)
		}
		return w, nil
	})
	if err != nil {
		return nil, err
	}
	return v.WithArch(arch), nil
}
