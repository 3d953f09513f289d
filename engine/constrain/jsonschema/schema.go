// Package jsonschema compiles a JSON Schema (a subset) to a GBNF grammar,
// as llama.cpp's json-schema-to-grammar does, so that --json-schema and
// --format json run on the same recogniser as --grammar
// (engine/constrain/gbnf): a pushdown machine, so nesting has no depth
// limit.
//
// The subset:
//
//	type            object, array, string, number, integer, boolean, null,
//	                or a list of them
//	object          properties (generated in the order the schema lists
//	                them), required, additionalProperties; only listed
//	                properties are generated, so additionalProperties false,
//	                true or a schema all validate. Without properties (and
//	                additionalProperties not false), any object.
//	array           items, minItems, maxItems
//	string          enum, const, pattern (the regex subset of
//	                engine/constrain/regex; unanchored unless it starts with
//	                ^ / ends with $, as JSON Schema says), minLength, maxLength
//	                (in characters; not together with pattern)
//	enum, const     any JSON values, written compactly
//	anyOf, oneOf    alternatives (oneOf is treated as anyOf: alternatives
//	                that overlap can produce a value matching more than one)
//	$ref            to #, #/$defs/NAME or #/definitions/NAME (recursion
//	                allowed)
//	true, {}        any JSON value
//
// Annotations (title, description, default, examples, format, $schema,
// $id, $comment, ...) are ignored. Any other keyword (minimum, allOf,
// prefixItems, patternProperties, ...) is an error naming its place, rather
// than output that might not validate. The whitespace policy and the bounds
// on numbers are those of JSON (json.go).
package jsonschema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"chat/engine/constrain/gbnf"
	"chat/models/quote"
)

// Grammar compiles the schema text src to a GBNF grammar whose root is the
// schema.
func Grammar(src []byte) (string, error) {
	root, err := decode(src)
	if err != nil {
		return "", err
	}
	c := &compiler{src: src, root: root, defs: map[*node]string{}, left: gbnf.MaxSource}
	expr, err := c.schema(root, "")
	if err != nil {
		return "", err
	}
	if c.left < 0 {
		return "", fmt.Errorf("json schema: %w", errSize)
	}
	var b strings.Builder
	b.WriteString(prelude)
	b.WriteString("root ::= " + expr + "\n")
	for _, r := range c.rules {
		b.WriteString(r + "\n")
	}
	return b.String(), nil
}

type compiler struct {
	src   []byte
	root  *node
	rules []string
	defs  map[*node]string // schemas with a rule of their own ($ref targets)
	n     int
	left  int // bytes of grammar still to be written (spend): gbnf refuses a larger one
	// bare are the $ref targets being compiled with no object or array
	// entered since: a reference back to one would be a rule that starts
	// with itself.
	bare []*node
}

// errAt is one line: place in the text, JSON pointer, message.
func (c *compiler) errAt(n *node, path, format string, a ...any) error {
	line, col := lineCol(c.src, n.off)
	if path == "" {
		path = "/"
	}
	return fmt.Errorf("json schema: line %d, col %d (%s): %s", line, col, printable(path), fmt.Sprintf(format, a...))
}

// printable is a JSON pointer as an error shows it: its keys come from the
// schema, so a newline or another control character in one is escaped
// (Go's quoting, without the quotes) and a long one cut, to keep the
// message one line.
func printable(path string) string {
	path = quote.Cut(path, quote.Max)
	if strings.IndexFunc(path, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return path
	}
	q := strconv.Quote(path)
	return q[1 : len(q)-1]
}

// rule adds "name ::= body" under a fresh name and returns the name.
func (c *compiler) rule(body string) string {
	c.n++
	name := fmt.Sprintf("s-%d", c.n)
	c.rules = append(c.rules, name+" ::= "+body)
	c.left -= len(c.rules[len(c.rules)-1])
	return name
}

var annotations = []string{"title", "description", "default", "examples", "format", "$schema", "$id",
	"$comment", "readOnly", "writeOnly", "deprecated", "contentMediaType", "contentEncoding", "$defs", "definitions"}

var byType = map[string][]string{
	"object":  {"properties", "required", "additionalProperties"},
	"array":   {"items", "minItems", "maxItems"},
	"string":  {"pattern", "minLength", "maxLength"},
	"number":  {},
	"integer": {},
	"boolean": {},
	"null":    {},
}

var typeNames = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// schema returns a GBNF expression for the values schema n accepts.
func (c *compiler) schema(n *node, path string) (string, error) {
	switch n.kind {
	case 'b':
		if !n.b {
			return "", c.errAt(n, path, "the schema false accepts no value")
		}
		return "value", nil
	case 'o':
	default:
		return "", c.errAt(n, path, "expected a schema (an object or a boolean)")
	}
	for i, k := range n.keys {
		if slices.Contains(annotations, k) || k == "type" || k == "enum" || k == "const" || k == "anyOf" || k == "oneOf" || k == "$ref" {
			continue
		}
		known := false
		for _, kw := range byType {
			known = known || slices.Contains(kw, k)
		}
		if !known {
			return "", c.errAt(n.vals[i], path+"/"+k, "keyword %s is not supported (outside the subset this app compiles)", quote.Quote(k))
		}
	}
	if ref := n.get("$ref"); ref != nil {
		if len(n.keys) > 1 && c.hasOtherThan(n, "$ref") {
			return "", c.errAt(ref, path+"/$ref", "$ref together with other keywords is not supported")
		}
		return c.ref(ref, path+"/$ref")
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		alts := n.get(k)
		if alts == nil {
			continue
		}
		if c.hasOtherThan(n, k) {
			return "", c.errAt(alts, path+"/"+k, "%s together with other keywords is not supported: move them into each alternative", k)
		}
		if alts.kind != 'a' || len(alts.vals) == 0 {
			return "", c.errAt(alts, path+"/"+k, "expected a non-empty array of schemas")
		}
		var exprs []string
		for i, a := range alts.vals {
			e, err := c.schema(a, fmt.Sprintf("%s/%s/%d", path, k, i))
			if err != nil {
				return "", err
			}
			exprs = append(exprs, e)
		}
		return "(" + strings.Join(exprs, " | ") + ")", nil
	}

	types, err := c.types(n, path)
	if err != nil {
		return "", err
	}
	if e := n.get("const"); e != nil {
		return c.enum(n, path, []*node{e}, types, "const")
	}
	if e := n.get("enum"); e != nil {
		if e.kind != 'a' || len(e.vals) == 0 {
			return "", c.errAt(e, path+"/enum", "expected a non-empty array")
		}
		return c.enum(n, path, e.vals, types, "enum")
	}
	if types == nil {
		return "value", nil
	}
	var exprs []string
	for _, t := range types {
		e, err := c.typed(n, path, t)
		if err != nil {
			return "", err
		}
		exprs = append(exprs, e)
	}
	if len(exprs) == 1 {
		return exprs[0], nil
	}
	return "(" + strings.Join(exprs, " | ") + ")", nil
}

func (c *compiler) hasOtherThan(n *node, key string) bool {
	for _, k := range n.keys {
		if k != key && !slices.Contains(annotations, k) {
			return true
		}
	}
	return false
}

// types is the "type" keyword as a list, or the type the other keywords
// imply when it is absent (nil: any value).
func (c *compiler) types(n *node, path string) ([]string, error) {
	t := n.get("type")
	if t == nil {
		for _, name := range []string{"object", "array", "string"} {
			for _, kw := range byType[name] {
				if n.get(kw) != nil {
					return []string{name}, nil
				}
			}
		}
		return nil, nil
	}
	var list []*node
	switch t.kind {
	case 's':
		list = []*node{t}
	case 'a':
		list = t.vals
	default:
		return nil, c.errAt(t, path+"/type", "expected a type name or a list of them")
	}
	var out []string
	for _, v := range list {
		if v.kind != 's' || !slices.Contains(typeNames, v.str) {
			return nil, c.errAt(v, path+"/type", "expected one of %s", strings.Join(typeNames, ", "))
		}
		if !slices.Contains(out, v.str) {
			out = append(out, v.str)
		}
	}
	if len(out) == 0 {
		return nil, c.errAt(t, path+"/type", "an empty list of types accepts no value")
	}
	return out, nil
}

// typed is the expression for one type with the keywords that apply to it.
func (c *compiler) typed(n *node, path, t string) (string, error) {
	if t == "object" || t == "array" { // a '{' or '[' comes first
		saved := c.bare
		c.bare = nil
		defer func() { c.bare = saved }()
	}
	switch t {
	case "object":
		return c.object(n, path)
	case "array":
		return c.array(n, path)
	case "string":
		return c.str(n, path)
	}
	return t, nil // number, integer, boolean, null: prelude rules
}

// ref compiles the target of a $ref once, under a rule of its own, so that
// recursive schemas become recursive rules.
func (c *compiler) ref(ref *node, path string) (string, error) {
	if ref.kind != 's' {
		return "", c.errAt(ref, path, "expected a string")
	}
	target := c.root
	if ref.str != "#" {
		var name string
		var ok bool
		for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
			if rest, found := strings.CutPrefix(ref.str, prefix); found {
				name, ok = rest, true
				if defs := c.root.get(strings.Trim(prefix[2:], "/")); defs != nil && defs.kind == 'o' {
					target = defs.get(unescapePointer(name))
				} else {
					target = nil
				}
			}
		}
		if !ok {
			return "", c.errAt(ref, path, "only references to #, #/$defs/NAME and #/definitions/NAME are supported, not %s", quote.Quote(ref.str))
		}
		if target == nil {
			return "", c.errAt(ref, path, "%s names no schema in the document", quote.Quote(ref.str))
		}
	}
	if slices.Contains(c.bare, target) {
		return "", c.errAt(ref, path, "%s refers back to itself before any object or array: it describes no value", quote.Quote(ref.str))
	}
	if name, ok := c.defs[target]; ok {
		return name, nil
	}
	c.n++
	name := fmt.Sprintf("ref-%d", c.n)
	c.defs[target] = name
	c.bare = append(c.bare, target)
	expr, err := c.schema(target, strings.TrimPrefix(ref.str, "#"))
	c.bare = c.bare[:len(c.bare)-1]
	if err != nil {
		return "", err
	}
	c.rules = append(c.rules, name+" ::= "+expr)
	return name, nil
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// enum is a choice of literal values, those of the allowed types.
func (c *compiler) enum(n *node, path string, vals []*node, types []string, kw string) (string, error) {
	var lits []string
	for _, v := range vals {
		if types != nil && !hasType(v, types) {
			continue
		}
		lits = append(lits, compact(v))
	}
	if len(lits) == 0 {
		return "", c.errAt(n, path+"/"+kw, "no %s value has the schema's type", kw)
	}
	slices.Sort(lits)
	return c.choice(slices.Compact(lits)), nil
}

// choice is a GBNF expression for exactly the texts of set (sorted,
// distinct), as a tree of their shared prefixes: one parse at a time
// follows the bytes generated, where an alternation of the texts kept one
// for every text that could still match (an enum of ~9,000 strings was
// "too ambiguous" after its opening quote). Each branch point is a rule of
// its own, so the grammar's nesting stays one level deep.
func (c *compiler) choice(set []string) string {
	if len(set) == 1 {
		return literal(set[0])
	}
	p := set[0][:commonPrefix(set[0], set[len(set)-1])] // sorted: the first and last share what all share
	var alts []string
	optional := false
	for rest := set; len(rest) > 0; {
		tail := rest[0][len(p):]
		if tail == "" {
			optional, rest = true, rest[1:]
			continue
		}
		_, size := utf8.DecodeRuneInString(tail)
		j := 1
		for j < len(rest) && strings.HasPrefix(rest[j][len(p):], tail[:size]) {
			j++
		}
		group := make([]string, j)
		for i, t := range rest[:j] {
			group[i] = t[len(p):]
		}
		alts = append(alts, c.choice(group))
		rest = rest[j:]
	}
	body := "(" + strings.Join(alts, " | ") + ")"
	if optional {
		body += "?"
	}
	if p != "" {
		body = literal(p) + " " + body
	}
	return c.rule(body)
}

// commonPrefix is the length of the longest prefix of whole runes that a
// and b share.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) {
		r, size := utf8.DecodeRuneInString(a[n:])
		if r2, size2 := utf8.DecodeRuneInString(b[n:]); r != r2 || size != size2 {
			break
		}
		n += size
	}
	return n
}

func hasType(v *node, types []string) bool {
	for _, t := range types {
		switch {
		case t == "object" && v.kind == 'o', t == "array" && v.kind == 'a', t == "string" && v.kind == 's',
			t == "number" && v.kind == 'n', t == "boolean" && v.kind == 'b', t == "null" && v.kind == 'z':
			return true
		case t == "integer" && v.kind == 'n':
			if _, err := strconv.ParseInt(v.num.String(), 10, 64); err == nil {
				return true
			}
		}
	}
	return false
}

// compact is the JSON text generated for an enum or const value.
func compact(v *node) string {
	switch v.kind {
	case 'o':
		parts := make([]string, len(v.keys))
		for i, k := range v.keys {
			parts[i] = quoteJSON(k) + ":" + compact(v.vals[i])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case 'a':
		parts := make([]string, len(v.vals))
		for i, e := range v.vals {
			parts[i] = compact(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case 's':
		return quoteJSON(v.str)
	case 'n':
		return v.num.String()
	case 'b':
		return strconv.FormatBool(v.b)
	}
	return "null"
}

// count reads a non-negative integer keyword (-1 when absent).
func (c *compiler) count(n *node, path, kw string) (int, error) {
	v := n.get(kw)
	if v == nil {
		return -1, nil
	}
	i, err := strconv.Atoi(v.num.String())
	if v.kind != 'n' || err != nil || i < 0 {
		return 0, c.errAt(v, path+"/"+kw, "expected a non-negative integer")
	}
	if i > maxCount {
		return 0, c.errAt(v, path+"/"+kw, "%d is over the supported %d", i, maxCount)
	}
	return i, nil
}

// maxCount bounds minItems, maxLength and the like (the grammar repeats).
const maxCount = 10_000

func (c *compiler) object(n *node, path string) (string, error) {
	props := n.get("properties")
	addl := n.get("additionalProperties")
	if props == nil {
		if addl != nil && addl.kind == 'b' && !addl.b {
			return `"{" ws "}"`, nil
		}
		return "object", nil
	}
	if props.kind != 'o' {
		return "", c.errAt(props, path+"/properties", "expected an object of schemas")
	}
	required := map[string]bool{}
	if r := n.get("required"); r != nil {
		if r.kind != 'a' {
			return "", c.errAt(r, path+"/required", "expected an array of property names")
		}
		for _, v := range r.vals {
			if v.kind != 's' {
				return "", c.errAt(v, path+"/required", "expected a property name")
			}
			if props.get(v.str) == nil {
				return "", c.errAt(v, path+"/required", "required property %s is not in properties (only listed properties are generated)", quote.Quote(v.str))
			}
			required[v.str] = true
		}
	}
	if addl != nil && addl.kind != 'b' && addl.kind != 'o' {
		return "", c.errAt(addl, path+"/additionalProperties", "expected a boolean or a schema")
	}
	// kv[i]: "name" ws ":" ws value ws.
	kv := make([]string, len(props.keys))
	for i, k := range props.keys {
		e, err := c.schema(props.vals[i], path+"/properties/"+k)
		if err != nil {
			return "", err
		}
		kv[i] = literal(quoteJSON(k)) + ` ws ":" ws ` + e + " ws"
	}
	// after[i]: the properties from i on once one has been written, each
	// behind a comma; first: the same when none has been written yet. Each
	// is a rule that names the next, and a property written twice is a
	// rule, so the grammar grows with the schema: written out, N required
	// properties took N²/2 (1,000 of them, 19 MB), and objects nested in
	// the second of two properties doubled at every level.
	after := make([]string, len(kv)+1) // after[len(kv)]: nothing
	for i := len(kv) - 1; i > 0; i-- {
		kv[i] = c.rule(kv[i])
		p := `"," ws ` + kv[i]
		if !required[props.keys[i]] {
			p = "(" + p + ")?"
		}
		after[i] = c.rule(p + " " + after[i+1])
	}
	first := `""`
	for i := len(kv) - 1; i >= 0; i-- {
		head := kv[i] + " " + after[i+1]
		if required[props.keys[i]] {
			first = c.rule(head)
		} else {
			first = c.rule(head + " | " + first)
		}
	}
	return `"{" ws ` + first + ` "}"`, nil
}

func (c *compiler) array(n *node, path string) (string, error) {
	item := "value"
	if it := n.get("items"); it != nil {
		if it.kind == 'a' {
			return "", c.errAt(it, path+"/items", "items as an array (tuples) is not supported")
		}
		var err error
		if item, err = c.schema(it, path+"/items"); err != nil {
			return "", err
		}
	}
	lo, err := c.count(n, path, "minItems")
	if err != nil {
		return "", err
	}
	hi, err := c.count(n, path, "maxItems")
	if err != nil {
		return "", err
	}
	lo = max(lo, 0)
	if hi >= 0 && hi < lo {
		return "", c.errAt(n, path, "maxItems %d is below minItems %d", hi, lo)
	}
	if hi == 0 {
		return `"[" ws "]"`, nil
	}
	if strings.Contains(item, " ") {
		item = c.rule(item) // written twice below: inline, arrays nested N deep took 2^N copies
	}
	one := item + " ws"
	more := `("," ws ` + one + ")"
	switch {
	case lo == 0 && hi < 0:
		return `"[" ws (` + one + " " + more + `*)? "]"`, nil
	case lo == 0:
		return `"[" ws (` + one + " " + more + fmt.Sprintf("{0,%d}", hi-1) + `)? "]"`, nil
	case hi < 0:
		return `"[" ws ` + one + " " + more + fmt.Sprintf("{%d,}", lo-1) + ` "]"`, nil
	}
	return `"[" ws ` + one + " " + more + fmt.Sprintf("{%d,%d}", lo-1, hi-1) + ` "]"`, nil
}

func (c *compiler) str(n *node, path string) (string, error) {
	lo, err := c.count(n, path, "minLength")
	if err != nil {
		return "", err
	}
	hi, err := c.count(n, path, "maxLength")
	if err != nil {
		return "", err
	}
	if p := n.get("pattern"); p != nil {
		if lo >= 0 || hi >= 0 {
			return "", c.errAt(p, path+"/pattern", "pattern together with minLength/maxLength is not supported")
		}
		if p.kind != 's' {
			return "", c.errAt(p, path+"/pattern", "expected a string")
		}
		body, err := pattern(p.str, &c.left)
		if err != nil {
			return "", c.errAt(p, path+"/pattern", "%v", err)
		}
		return `"\"" ` + body + ` "\""`, nil
	}
	lo = max(lo, 0)
	if hi >= 0 && hi < lo {
		return "", c.errAt(n, path, "maxLength %d is below minLength %d", hi, lo)
	}
	switch {
	case lo == 0 && hi < 0:
		return "string", nil
	case hi < 0:
		return fmt.Sprintf(`"\"" char{%d,} "\""`, lo), nil
	}
	return fmt.Sprintf(`"\"" char{%d,%d} "\""`, lo, hi), nil
}
