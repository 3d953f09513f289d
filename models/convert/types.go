package convert

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"chat/models/gguf"
)

// Mix is a target of llama-quantize (its ftype): the default type of the
// weight matrices and the exceptions its rules make for some tensors
// (llama_tensor_get_type in src/llama-quant.cpp).
type Mix struct {
	Name     string
	Default  gguf.Type
	FileType uint32 // general.file_type (llama_ftype)
	kind     mixKind
}

type mixKind int

const (
	plain mixKind = iota
	q4KM
	q4KS
	q5KM
	q5KS
	q2K
	q3KM
	iq4 // IQ4_NL and IQ4_XS, which share their rules
)

// mixes are the targets --type takes. q4_k, q5_k and q3_k are
// llama-quantize's _M mixes (q4_k and q5_k its recommended ones).
var mixes = map[string]Mix{
	"q2_k":   {Default: gguf.TypeQ2_K, FileType: 10, kind: q2K},
	"q3_k_m": {Default: gguf.TypeQ3_K, FileType: 12, kind: q3KM},
	"f32":    {Default: gguf.TypeF32, FileType: 0},
	"f16":    {Default: gguf.TypeF16, FileType: 1},
	"bf16":   {Default: gguf.TypeBF16, FileType: 32},
	"q8_0":   {Default: gguf.TypeQ8_0, FileType: 7},
	"q4_0":   {Default: gguf.TypeQ4_0, FileType: 2},
	"q5_0":   {Default: gguf.TypeQ5_0, FileType: 8},
	"q4_k_m": {Default: gguf.TypeQ4_K, FileType: 15, kind: q4KM},
	"q4_k_s": {Default: gguf.TypeQ4_K, FileType: 14, kind: q4KS},
	"q5_k_m": {Default: gguf.TypeQ5_K, FileType: 17, kind: q5KM},
	"q5_k_s": {Default: gguf.TypeQ5_K, FileType: 16, kind: q5KS},
	"q6_k":   {Default: gguf.TypeQ6_K, FileType: 18},
	"iq4_nl": {Default: gguf.TypeIQ4_NL, FileType: 25, kind: iq4},
	"iq4_xs": {Default: gguf.TypeIQ4_XS, FileType: 30, kind: iq4},
}

// MixNames lists the names ParseMix takes.
func MixNames() []string {
	names := []string{"q3_k", "q4_k", "q5_k"}
	for n := range mixes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ParseMix reads a --type value.
func ParseMix(name string) (Mix, error) {
	n := strings.ToLower(name)
	switch n {
	case "q3_k":
		n = "q3_k_m"
	case "q4_k":
		n = "q4_k_m"
	case "q5_k":
		n = "q5_k_m"
	}
	m, ok := mixes[n]
	if !ok {
		return Mix{}, fmt.Errorf("convert: unknown type %q (want %s)", name, strings.Join(MixNames(), ", "))
	}
	m.Name = n
	return m, nil
}

// quantized reports whether the mix's default is a block type: then the
// rules of llama-quantize pick per tensor; a float target converts every
// weight matrix to it.
func (m Mix) quantized() bool {
	return m.Default != gguf.TypeF32 && m.Default != gguf.TypeF16 && m.Default != gguf.TypeBF16
}

// SetTypes sets every tensor's Type for mix as llama-quantize chooses it:
// vectors, norms and position embeddings stay float32 (or as stored);
// the output layer (and a tied token embedding, which is it) gets Q6_K
// unless the mix is Q8_0; attn_v and ffn_down get more bits in the layers
// the _M and _S mixes name (Q2_K and Q3_K_M also attn_output, Q3_K_M
// attn_qkv; IQ4_NL and IQ4_XS Q5_K for attn_v with n_gqa ≥ 4 and for
// ffn_down in the first eighth of the layers, as without an imatrix); and
// a matrix whose rows are not a whole number of blocks falls back to a type
// whose blocks fit (Q2_K, Q3_K to Q4_0, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K
// to Q8_0, IQ4_XS to IQ4_NL, then F16).
func SetTypes(f *File, mix Mix) error {
	gqa := gqaOf(f)
	tied := true
	nV, nDown := 0, 0
	for i := range f.Tensors {
		switch role(f.Tensors[i].Name) {
		case "output":
			tied = false
		case "attn_v":
			nV++
		case "ffn_down":
			nDown++
		}
	}
	iV, iDown := 0, 0
	for i := range f.Tensors {
		t := &f.Tensors[i]
		keep := gguf.TypeF32
		if t.Raw != nil {
			keep = t.Src
		}
		if !quantizable(t) {
			t.Type = keep
			continue
		}
		if !mix.quantized() {
			t.Type = mix.Default
			continue
		}
		typ := mix.Default
		cols := t.Shape[len(t.Shape)-1]
		r := role(t.Name)
		switch {
		case r == "output" || (r == "token_embd" && tied):
			if cols%mix.Default.BlockSize() != 0 {
				typ = gguf.TypeQ8_0
			} else if typ != gguf.TypeQ8_0 {
				typ = gguf.TypeQ6_K
			}
		case r == "attn_v":
			switch {
			case mix.kind == q2K && gqa >= 4:
				typ = gguf.TypeQ4_K
			case mix.kind == q2K:
				typ = gguf.TypeQ3_K
			case mix.kind == q3KM && iV < 2:
				typ = gguf.TypeQ5_K
			case mix.kind == q3KM:
				typ = gguf.TypeQ4_K
			case (mix.kind == q4KM || mix.kind == q5KM) && moreBits(iV, nV):
				typ = gguf.TypeQ6_K
			case mix.kind == q4KS && iV < 4:
				typ = gguf.TypeQ5_K
			case mix.kind == iq4 && gqa >= 4:
				typ = gguf.TypeQ5_K
			}
			iV++
		case r == "ffn_down":
			switch {
			case mix.kind == q2K:
				typ = gguf.TypeQ3_K
			case mix.kind == q3KM && iDown < nDown/16:
				typ = gguf.TypeQ5_K
			case mix.kind == q3KM:
				typ = gguf.TypeQ4_K
			case (mix.kind == q4KM || mix.kind == q5KM) && moreBits(iDown, nDown):
				typ = gguf.TypeQ6_K
			case (mix.kind == q4KS || mix.kind == iq4) && iDown < nDown/8:
				typ = gguf.TypeQ5_K
			}
			iDown++
		case r == "attn_output":
			switch mix.kind {
			case q2K:
				typ = gguf.TypeQ3_K
			case q3KM:
				typ = gguf.TypeQ4_K
			}
		case r == "attn_qkv":
			switch mix.kind {
			case q3KM:
				typ = gguf.TypeQ4_K
			case q4KM:
				typ = gguf.TypeQ5_K
			case q5KM:
				typ = gguf.TypeQ6_K
			}
		}
		t.Type = fallback(typ, cols)
	}
	return nil
}

// gqaOf is the model's n_gqa (heads per KV head), 1 when the metadata does
// not say.
func gqaOf(f *File) int {
	var heads, kv uint32
	for _, m := range f.Meta {
		v, ok := m.Value.(uint32)
		switch {
		case !ok:
		case m.Key == f.Arch+".attention.head_count":
			heads = v
		case m.Key == f.Arch+".attention.head_count_kv":
			kv = v
		}
	}
	if heads == 0 || kv == 0 {
		return 1
	}
	return int(heads / kv)
}

// moreBits is llama-quantize's use_more_bits: the first and last eighth of
// the layers and every third one between.
func moreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// fallback is llama-quantize's tensor_type_fallback for rows of cols values.
func fallback(t gguf.Type, cols int) gguf.Type {
	if cols%t.BlockSize() == 0 {
		return t
	}
	switch t {
	case gguf.TypeQ2_K, gguf.TypeQ3_K:
		t = gguf.TypeQ4_0
	case gguf.TypeQ4_K:
		t = gguf.TypeQ5_0
	case gguf.TypeQ5_K:
		t = gguf.TypeQ5_1
	case gguf.TypeQ6_K:
		t = gguf.TypeQ8_0
	case gguf.TypeIQ4_XS:
		t = gguf.TypeIQ4_NL
	}
	if cols%t.BlockSize() != 0 {
		return gguf.TypeF16
	}
	return t
}

// quantizable is llama-quantize's tensor_allows_quantization for the
// tensors these architectures have: 2-D, named "*weight", not a norm, not
// the position embedding.
func quantizable(t *Tensor) bool {
	return len(t.Shape) == 2 && strings.HasSuffix(t.Name, "weight") &&
		!strings.Contains(t.Name, "_norm.weight") && t.Name != "position_embd.weight"
}

// role is a tensor's name without its block: "blk.3.attn_v.weight" →
// "attn_v", "output.weight" → "output".
func role(name string) string {
	if rest, ok := strings.CutPrefix(name, "blk."); ok {
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			if _, err := strconv.Atoi(rest[:i]); err == nil {
				name = rest[i+1:]
			}
		}
	}
	name, _, _ = strings.Cut(name, ".")
	return name
}

// KeepTypes writes every tensor in the type it came in (float32 for values
// given as Data without a source type): a GGUF file rewritten with some
// matrices changed, as llama.cpp's export-lora does.
func KeepTypes(f *File) {
	for i := range f.Tensors {
		t := &f.Tensors[i]
		t.Type = gguf.TypeF32
		if t.Raw != nil || t.Src != 0 {
			t.Type = t.Src
		}
		if !gguf.CanQuantize(t.Type) {
			t.Type = gguf.TypeF16 // a type this app cannot write (IQ): the nearest it can
		}
	}
}

// StoredMix describes a file whose types KeepTypes set: the file type its
// metadata names, or else the type most of its matrices have.
func StoredMix(f *File) Mix {
	count := map[gguf.Type]int{}
	best := gguf.TypeF32
	for i := range f.Tensors {
		if t := &f.Tensors[i]; len(t.Shape) == 2 {
			count[t.Type]++
			if count[t.Type] > count[best] {
				best = t.Type
			}
		}
	}
	m := Mix{Name: "as stored", Default: best, FileType: fileTypeOf(best)}
	for _, kv := range f.Meta {
		if v, ok := kv.Value.(uint32); ok && kv.Key == "general.file_type" {
			m.FileType = v
		}
	}
	return m
}

// fileTypeOf is the llama_ftype of a file mostly of type t (IQ4_NL and
// IQ4_XS have one mix each).
func fileTypeOf(t gguf.Type) uint32 {
	for _, m := range mixes {
		if m.Default == t && (m.kind == plain || m.kind == iq4) {
			return m.FileType
		}
	}
	return 0
}
