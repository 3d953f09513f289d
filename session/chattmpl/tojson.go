package chattmpl

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// filterToJSON is transformers' tojson filter: tojson(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False) is json.dumps(x, ...).
// gonja's own is Go's json.Marshal, which writes no spaces and escapes <, >
// and & (it would turn "<tools>" in a tool schema into
// "\u003ctools\u003e"). Dicts keep their order (a dict literal's, and role
// before content in a message); a Go map has none, so its keys come out
// sorted.
func filterToJSON(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	opt := jsonOpts{item: ", ", key: ": ", indent: -1}
	arg := func(name string, pos int) *exec.Value {
		if v, ok := p.KwArgs[name]; ok {
			return v
		}
		if pos < len(p.Args) {
			return p.Args[pos]
		}
		return nil
	}
	if v := arg("ensure_ascii", 0); v != nil {
		opt.ascii = v.IsTrue()
	}
	if v := arg("indent", 1); v != nil && !v.IsNil() {
		switch {
		case v.IsInteger():
			opt.indent = v.Integer()
			opt.pad = strings.Repeat(" ", max(opt.indent, 0))
		case v.IsString():
			opt.indent, opt.pad = 0, v.String()
		default:
			return exec.AsValue(errors.New("tojson: indent must be an integer or a string"))
		}
		opt.item = ","
	}
	if v := arg("separators", 2); v != nil && !v.IsNil() {
		s, ok := v.ToGoSimpleType(false).([]any)
		if !ok || len(s) != 2 {
			return exec.AsValue(errors.New("tojson: separators must be a pair of strings"))
		}
		a, ok1 := s[0].(string)
		b, ok2 := s[1].(string)
		if !ok1 || !ok2 {
			return exec.AsValue(errors.New("tojson: separators must be a pair of strings"))
		}
		opt.item, opt.key = a, b
	}
	if v := arg("sort_keys", 3); v != nil {
		opt.sort = v.IsTrue()
	}
	x, err := jsonOf(in, 0)
	if err != nil {
		return exec.AsValue(err)
	}
	var b strings.Builder
	if err := writeJSON(&b, x, opt, 0); err != nil {
		return exec.AsValue(err)
	}
	return exec.AsValue(b.String())
}

type jsonOpts struct {
	item, key string
	indent    int // -1: one line
	pad       string
	ascii     bool
	sort      bool // sort_keys
}

// jsonObject is a dict in its order.
type jsonObject struct {
	keys []string
	vals []any
}

// jsonOf is v as plain values for writeJSON: nil, bool, int, float64,
// string, []any, jsonObject.
func jsonOf(v *exec.Value, depth int) (any, error) {
	if depth > 100 {
		return nil, errors.New("tojson: value nested too deeply")
	}
	switch {
	case v.IsError():
		return nil, errors.New(v.Error())
	case v.IsNil() || v.IsBool() || v.IsInteger() || v.IsFloat() || v.IsString():
		return v.ToGoSimpleType(false), nil
	case v.IsList():
		out := make([]any, v.Len())
		for i := range out {
			x, err := jsonOf(v.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case v.IsDict():
		var o jsonObject
		add := func(k, x *exec.Value) error {
			y, err := jsonOf(x, depth+1)
			o.keys = append(o.keys, jsonKey(k))
			o.vals = append(o.vals, y)
			return err
		}
		if d, ok := v.Interface().(*exec.Dict); ok {
			for _, p := range d.Pairs {
				if err := add(p.Key, p.Value); err != nil {
					return nil, err
				}
			}
			return o, nil
		}
		for _, p := range v.Items() {
			if err := add(p.Key, p.Value); err != nil {
				return nil, err
			}
		}
		sortObject(&o)
		return o, nil
	}
	return v.ToGoSimpleType(false), nil
}

// jsonKey is a dict key as json.dumps writes it: str(int), "true", "null".
func jsonKey(k *exec.Value) string {
	switch {
	case k.IsNil():
		return "null"
	case k.IsBool():
		return strconv.FormatBool(k.Bool())
	case k.IsFloat():
		return pyFloat(k.Float())
	}
	return k.String()
}

func sortObject(o *jsonObject) {
	idx := make([]int, len(o.keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return o.keys[idx[a]] < o.keys[idx[b]] })
	keys, vals := make([]string, len(idx)), make([]any, len(idx))
	for i, j := range idx {
		keys[i], vals[i] = o.keys[j], o.vals[j]
	}
	o.keys, o.vals = keys, vals
}

func (o jsonOpts) newline(b *strings.Builder, depth int) {
	if o.indent < 0 {
		return
	}
	b.WriteByte('\n')
	for i := 0; i < depth; i++ {
		b.WriteString(o.pad)
	}
}

func writeJSON(b *strings.Builder, v any, o jsonOpts, depth int) error {
	if depth > 100 {
		return errors.New("tojson: value nested too deeply")
	}
	switch x := v.(type) {
	case error:
		return x
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int:
		b.WriteString(strconv.Itoa(x))
	case float64:
		b.WriteString(pyFloat(x))
	case string:
		writeJSONString(b, x, o.ascii)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(o.item)
			}
			o.newline(b, depth+1)
			if err := writeJSON(b, e, o, depth+1); err != nil {
				return err
			}
		}
		o.newline(b, depth)
		b.WriteByte(']')
	case jsonObject:
		if len(x.keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		if o.sort {
			sortObject(&x)
		}
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(o.item)
			}
			o.newline(b, depth+1)
			writeJSONString(b, k, o.ascii)
			b.WriteString(o.key)
			if err := writeJSON(b, x.vals[i], o, depth+1); err != nil {
				return err
			}
		}
		o.newline(b, depth)
		b.WriteByte('}')
	default:
		writeJSONString(b, fmt.Sprint(x), o.ascii)
	}
	return nil
}

// pyFloat is Python's float repr as json.dumps writes it.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64) // 1e+16, 1e-05 as Python

	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func writeJSONString(b *strings.Builder, s string, ascii bool) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		case ascii && r > 0x7f:
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
