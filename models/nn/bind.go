package nn

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"chat/models/weights"
)

// Weights are bound to an architecture's struct by tags, as ollama's model
// packages do: the tag names the tensor in the file format (key "gguf" or
// "pt") and the tag "shape" its row-major shape in terms of the
// hyper-parameters, so the struct is the table of what the file must hold.
//
//	type block struct {
//		AttnNorm []float32      `gguf:"attn_norm.weight" shape:"dim"`
//		Q        weights.Linear `gguf:"attn_q.weight" shape:"heads*head_dim,dim"`
//		QB       []float32      `gguf:"attn_q.bias,optional" shape:"heads*head_dim"`
//	}
//	type model struct {
//		Blocks []block `gguf:"blk.%d"` // pre-sized; element i is under "blk.i."
//	}
//
// A field of type weights.Linear takes a 2-D tensor in any format; a
// []weights.Linear takes a 3-D tensor of stacked matrices (a mixture of
// experts' [n_expert][rows][cols]), one matrix per index of its first
// dimension, from a Source that is also a Stacks; a []float32 takes the
// values as float32; a struct without a tag shares its
// parent's prefix, with one it adds "tag."; a slice of structs is bound
// element by element; a non-nil pointer to a struct, or an interface
// holding one, is bound like the struct it points to, so an architecture
// picks a variant (GQA or MLA attention, a dense or a mixture-of-experts
// feed-forward) by the type it puts there before binding. Shapes are
// comma-separated sums of products of names and integers. Tag options:
// "optional" (nil when absent), "if=NAME" (bound, and required, only when
// dims[NAME] is not 0), "keep" (never re-encoded by Model.Convert:
// embeddings and output layers, which the course's quantize_int8 skips too)
// and "embed" (a decode step reads one row of it, for WeightBytes). A
// separate tag fuse:"NAME" puts matrices of one struct that multiply the
// same input in a group (Q, K and V): they are loaded as one matrix of
// their rows stacked in field order, when their format allows, and each
// field holds its part (weights.Split), which Pass.Mul2 and Pass.Mul3
// multiply in one product.

// Source hands out a file's tensors by name.
type Source interface {
	// Shape is the named tensor's row-major shape (ok false when absent).
	Shape(name string) (shape []int, ok bool)
	// Linear is a 2-D tensor as a weight matrix.
	Linear(name string) (weights.Linear, error)
	// Floats is a tensor's values as float32.
	Floats(name string) ([]float32, error)
}

// Stacks is a Source that hands out a 3-D tensor as the matrices stacked
// in it, each a view of its part of the tensor (no copy of the whole).
type Stacks interface {
	Stack(name string) ([]weights.Linear, error)
}

// MissingError is a required tensor that is not in the file.
type MissingError struct {
	Name  string
	Shape []int
	Why   string // the hyper-parameters the shape comes from: "n_embed=32, n_head=4"
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("missing %s, expected shape %v (%s)", e.Name, e.Shape, e.Why)
}

// ShapeError is a tensor whose shape is not the one the hyper-parameters ask.
type ShapeError struct {
	Name      string
	Got, Want []int
	Why       string
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("%s has shape %v, expected %v (%s)", e.Name, e.Got, e.Want, e.Why)
}

var (
	linearType  = reflect.TypeFor[weights.Linear]()
	linearsType = reflect.TypeFor[[]weights.Linear]()
	floatsType  = reflect.TypeFor[[]float32]()
)

// Bind fills the tagged fields of dst, a pointer to a struct, from src.
// key is the tag key ("gguf", "pt"); dims holds the values of the names the
// shape tags use. It stops at the first missing or misshapen tensor.
func Bind(dst any, key string, src Source, dims map[string]int) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic("nn.Bind: dst must be a pointer to a struct")
	}
	b := binder{key: key, src: src, dims: dims}
	return b.structFields(v.Elem(), "")
}

// Names lists the tensors Bind would read into dst, in order, without a
// source: the names a file must have (optional ones included).
func Names(dst any, key string, dims map[string]int) []string {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic("nn.Names: dst must be a pointer to a struct")
	}
	var names []string
	b := binder{key: key, dims: dims, names: &names}
	_ = b.structFields(v.Elem(), "")
	return names
}

type binder struct {
	key   string
	src   Source
	dims  map[string]int
	names *[]string // Names: record instead of binding
}

func (b *binder) structFields(v reflect.Value, prefix string) error {
	t := v.Type()
	var fused map[string]bool // the fuse groups bound
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, hasTag := f.Tag.Lookup(b.key)
		name, opts := parseTag(tag)
		if opts.cond != "" && b.dim(opts.cond) == 0 {
			continue
		}
		fv := v.Field(i)
		p := prefix
		if hasTag && name != "" {
			p += name + "."
		}
		switch {
		case f.Type == linearType || f.Type == floatsType || f.Type == linearsType:
			if !hasTag {
				continue
			}
			if g := f.Tag.Get("fuse"); g != "" && f.Type == linearType {
				if !fused[g] {
					if fused == nil {
						fused = map[string]bool{}
					}
					fused[g] = true
					if err := b.group(v, prefix, g); err != nil {
						return err
					}
				}
				continue
			}
			if err := b.tensor(fv, prefix+name, opts, f.Tag.Get("shape")); err != nil {
				return err
			}
		case f.Type.Kind() == reflect.Struct:
			if err := b.structFields(fv, p); err != nil {
				return err
			}
		case (f.Type.Kind() == reflect.Pointer || f.Type.Kind() == reflect.Interface) && !fv.IsNil():
			e := fv.Elem()
			if e.Kind() == reflect.Pointer {
				e = e.Elem()
			}
			if e.Kind() == reflect.Struct {
				if err := b.structFields(e, p); err != nil {
					return err
				}
			}
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct && hasTag:
			for j := 0; j < fv.Len(); j++ {
				if err := b.structFields(fv.Index(j), prefix+fmt.Sprintf(name, j)+"."); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// group binds the matrices of struct v tagged fuse:"g" (those bound: not
// skipped by an "if=" option). When all of them are in the file with the
// shapes asked, they are loaded stacked (Fuser) or stacked after loading
// (weights.Stack), and each field gets its part of the fused matrix
// (weights.Split), which Pass.Mul2 and Mul3 multiply in one product.
// Otherwise, or when the format cannot be stacked and split without a copy
// (weights.Stack), each is bound alone, as without the tag.
func (b *binder) group(v reflect.Value, prefix, g string) error {
	type member struct {
		fv    reflect.Value
		name  string
		opts  tagOpts
		shape string
	}
	var ms []member
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup(b.key)
		if !f.IsExported() || !ok || f.Type != linearType || f.Tag.Get("fuse") != g {
			continue
		}
		name, opts := parseTag(tag)
		if opts.cond != "" && b.dim(opts.cond) == 0 {
			continue
		}
		ms = append(ms, member{v.Field(i), prefix + name, opts, f.Tag.Get("shape")})
	}
	alone := func() error {
		for _, m := range ms {
			if err := b.tensor(m.fv, m.name, m.opts, m.shape); err != nil {
				return err
			}
		}
		return nil
	}
	if len(ms) < 2 || b.names != nil {
		return alone()
	}
	names, rows, cols := make([]string, len(ms)), make([]int, len(ms)), 0
	for i, m := range ms {
		want, _ := b.shape(m.shape)
		got, ok := b.src.Shape(m.name)
		if !ok || len(got) != 2 || want != nil && !equalInts(got, want) || i > 0 && got[1] != cols {
			return alone() // absent or misshapen: bound alone, which reports it
		}
		names[i], rows[i], cols = m.name, got[0], got[1]
	}
	var whole weights.Linear
	if fu, ok := b.src.(Fuser); ok {
		var err error
		if whole, err = fu.Fused(names); err != nil {
			return err
		}
	} else {
		if err := alone(); err != nil {
			return err
		}
		parts := make([]weights.Linear, len(ms))
		for i, m := range ms {
			parts[i] = m.fv.Interface().(weights.Linear)
		}
		whole = weights.Stack(parts...)
	}
	if whole == nil {
		return alone()
	}
	parts := weights.Split(whole, rows...)
	if parts == nil {
		return alone()
	}
	for i, m := range ms {
		m.fv.Set(reflect.ValueOf(&parts[i]).Elem())
	}
	return nil
}

// A Fuser is a Source that can load several matrices as one, their rows
// stacked in order (weights.StackGGUF), without loading each first; it
// returns nil when their formats cannot be stacked.
type Fuser interface {
	Fused(names []string) (weights.Linear, error)
}

func (b *binder) tensor(fv reflect.Value, name string, opts tagOpts, shapeTag string) error {
	if b.names != nil {
		*b.names = append(*b.names, name)
		return nil
	}
	want, why := b.shape(shapeTag)
	got, ok := b.src.Shape(name)
	if !ok {
		if opts.optional {
			return nil
		}
		return &MissingError{Name: name, Shape: want, Why: why}
	}
	if want != nil && !equalInts(got, want) {
		return &ShapeError{Name: name, Got: got, Want: want, Why: why}
	}
	if fv.Type() == linearsType {
		st, ok := b.src.(Stacks)
		if len(got) != 3 || !ok {
			return &ShapeError{Name: name, Got: got, Want: []int{-1, -1, -1}, Why: "stacked matrices"}
		}
		ls, err := st.Stack(name)
		if err != nil {
			return err
		}
		fv.Set(reflect.ValueOf(ls))
		return nil
	}
	if fv.Type() == linearType {
		if len(got) != 2 {
			return &ShapeError{Name: name, Got: got, Want: []int{-1, -1}, Why: "a matrix"}
		}
		l, err := b.src.Linear(name)
		if err != nil {
			return err
		}
		fv.Set(reflect.ValueOf(&l).Elem())
		return nil
	}
	w, err := b.src.Floats(name)
	if err != nil {
		return err
	}
	fv.Set(reflect.ValueOf(w))
	return nil
}

// shape evaluates a shape tag: comma-separated products of names from dims
// and integers ("n_head*head_dim,n_embed"). It returns the shape and the
// names it used with their values.
func (b *binder) shape(tag string) ([]int, string) {
	if tag == "" {
		return nil, ""
	}
	var shape []int
	var why []string
	seen := map[string]bool{}
	for _, dim := range strings.Split(tag, ",") {
		sum := 0
		for _, prod := range strings.Split(strings.TrimSpace(dim), "+") {
			v := 1
			for _, term := range strings.Split(prod, "*") {
				if n, err := strconv.Atoi(term); err == nil {
					v *= n
					continue
				}
				v *= b.dim(term)
				if !seen[term] {
					seen[term] = true
					why = append(why, fmt.Sprintf("%s=%d", term, b.dim(term)))
				}
			}
			sum += v
		}
		shape = append(shape, sum)
	}
	return shape, strings.Join(why, ", ")
}

func (b *binder) dim(name string) int {
	n, ok := b.dims[name]
	if !ok {
		panic(fmt.Sprintf("nn.Bind: a tag names %q, which dims lacks", name))
	}
	return n
}

type tagOpts struct {
	optional, keep, embed bool
	cond                  string // if=NAME
}

func parseTag(tag string) (string, tagOpts) {
	parts := strings.Split(tag, ",")
	var o tagOpts
	for _, p := range parts[1:] {
		switch p {
		case "optional":
			o.optional = true
		case "keep":
			o.keep = true
		case "embed":
			o.embed = true
		default:
			if c, ok := strings.CutPrefix(p, "if="); ok {
				o.cond = c
				continue
			}
			panic(fmt.Sprintf("nn: unknown tag option %q in %q", p, tag))
		}
	}
	return parts[0], o
}

// fieldOpts reads the options of a field from whichever format tag it has.
func fieldOpts(f reflect.StructField) tagOpts {
	for _, key := range []string{"gguf", "pt"} {
		if tag, ok := f.Tag.Lookup(key); ok {
			_, o := parseTag(tag)
			return o
		}
	}
	return tagOpts{}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ConvertArch returns a copy of arch (a pointer to a struct) with every
// weight matrix not tagged "keep" replaced by fn's result. Structs and
// slices of structs are copied; everything else (vectors, tables, kept
// matrices) is shared with arch, which is not changed.
func ConvertArch(arch Arch, fn func(weights.Linear) (weights.Linear, error)) (Arch, error) {
	return mapArch(arch, "", func(_ string, keep bool, l weights.Linear) (weights.Linear, error) {
		if keep {
			return l, nil
		}
		return fn(l)
	})
}

// mapArch returns a copy of arch with every weight matrix replaced by fn's
// result; fn gets the matrix's name under tag key (see Tensors; "" when key
// is "") and whether it is tagged "keep".
func mapArch(arch Arch, key string, fn func(name string, keep bool, l weights.Linear) (weights.Linear, error)) (Arch, error) {
	v := reflect.ValueOf(arch)
	m := mapper{key: key, fn: fn}
	nv, err := m.value(v.Elem(), false, "", "")
	if err != nil {
		return nil, err
	}
	out := reflect.New(v.Elem().Type())
	out.Elem().Set(nv)
	return out.Interface().(Arch), nil
}

// mapper walks an architecture the way the binder does, naming each matrix
// by the tags of key on the way down.
type mapper struct {
	key string
	fn  func(name string, keep bool, l weights.Linear) (weights.Linear, error)
	vec func(name string, w []float32) // bound vectors, when set
}

// value maps v; name is v's own name (a matrix's), prefix the prefix of the
// fields inside it (a struct's).
func (m *mapper) value(v reflect.Value, keep bool, name, prefix string) (reflect.Value, error) {
	switch {
	case v.Type() == floatsType:
		if m.vec != nil && name != "" && v.Len() > 0 {
			m.vec(name, v.Interface().([]float32))
		}
		return v, nil
	case v.Type() == linearsType:
		// Stacked matrices are mapped one by one but named by no tag: a
		// file names only their stack.
		ls := v.Interface().([]weights.Linear)
		if ls == nil {
			return v, nil
		}
		out := make([]weights.Linear, len(ls))
		for i, l := range ls {
			var err error
			if out[i], err = m.fn("", keep, l); err != nil {
				return v, err
			}
		}
		return reflect.ValueOf(out), nil
	case v.Type() == linearType:
		if v.IsNil() {
			return v, nil
		}
		l, err := m.fn(name, keep, v.Interface().(weights.Linear))
		if err != nil {
			return v, err
		}
		return reflect.ValueOf(&l).Elem(), nil
	case v.Kind() == reflect.Struct:
		nv := reflect.New(v.Type()).Elem()
		nv.Set(v)
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			fname, fprefix := "", prefix
			if tag, has := f.Tag.Lookup(m.key); m.key != "" && has {
				n, _ := parseTag(tag)
				fname = prefix + n
				switch {
				case f.Type.Kind() == reflect.Slice:
					fprefix = prefix + n // a "%d" pattern, formatted per element
				case n != "":
					fprefix = prefix + n + "."
				}
			}
			c, err := m.value(v.Field(i), keep || fieldOpts(f).keep, fname, fprefix)
			if err != nil {
				return v, err
			}
			nv.Field(i).Set(c)
		}
		return nv, nil
	case (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && !v.IsNil():
		e := v.Elem() // a pointer (in an interface) or the struct (behind a pointer)
		ptr := v
		if v.Kind() == reflect.Interface {
			ptr = e
		}
		if ptr.Kind() != reflect.Pointer || ptr.Elem().Kind() != reflect.Struct {
			return v, nil
		}
		c, err := m.value(ptr.Elem(), keep, name, prefix)
		if err != nil {
			return v, err
		}
		np := reflect.New(ptr.Elem().Type())
		np.Elem().Set(c)
		if v.Kind() == reflect.Interface {
			ni := reflect.New(v.Type()).Elem()
			ni.Set(np)
			return ni, nil
		}
		return np, nil
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct && !v.IsNil():
		ns := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			p := prefix
			if strings.Contains(prefix, "%") {
				p = fmt.Sprintf(prefix, i) + "."
			}
			c, err := m.value(v.Index(i), keep, "", p)
			if err != nil {
				return v, err
			}
			ns.Index(i).Set(c)
		}
		return ns, nil
	}
	return v, nil
}

// WeightBytes is the weight bytes one decoded token reads from arch (a
// pointer to a struct): every matrix and bound vector once (a matrix in two
// fields, such as a tied embedding, once), but one row of a matrix tagged
// "embed". Tables that are not weights (rope) are not counted: they are not
// bound vectors.
func WeightBytes(arch any) int64 { return weightBytes(arch, true) }

// ResidentBytes is the memory arch's bound weights take: WeightBytes with
// every row of an embedding.
func ResidentBytes(arch any) int64 { return weightBytes(arch, false) }

func weightBytes(arch any, perToken bool) int64 {
	seen := map[weights.Linear]bool{}
	var n int64
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			t := v.Type()
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				fv := v.Field(i)
				switch {
				case f.Type == linearType && !fv.IsNil():
					l := fv.Interface().(weights.Linear)
					if perToken && fieldOpts(f).embed {
						n += l.Bytes() / int64(l.Rows())
					} else if !seen[l] {
						seen[l] = true
						n += l.Bytes()
					}
				case f.Type == linearsType:
					for _, l := range fv.Interface().([]weights.Linear) {
						n += l.Bytes()
					}
				case f.Type == floatsType && isBound(f):
					n += 4 * int64(fv.Len())
				default:
					walk(fv)
				}
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Struct {
				for i := 0; i < v.Len(); i++ {
					walk(v.Index(i))
				}
			}
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() && v.Type() != linearType {
				walk(v.Elem())
			}
		}
	}
	walk(reflect.ValueOf(arch).Elem())
	return n
}

// isBound reports whether a field carries a format tag.
func isBound(f reflect.StructField) bool {
	_, g := f.Tag.Lookup("gguf")
	_, p := f.Tag.Lookup("pt")
	return g || p
}

// Linears lists arch's weight matrices that Convert re-encodes (all but
// those tagged "keep"), each once, in field order.
func Linears(arch Arch) []weights.Linear {
	var out []weights.Linear
	seen := map[weights.Linear]bool{}
	_, _ = ConvertArch(arch, func(l weights.Linear) (weights.Linear, error) {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
		return l, nil
	})
	return out
}
