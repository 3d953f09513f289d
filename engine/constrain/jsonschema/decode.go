package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"chat/models/quote"
)

// node is a JSON value read with its object keys in order and its byte
// offset, so that property order is kept (JSON Schema leaves it to the
// writer; we generate properties in the order the schema lists them) and
// errors can name a line and column.
type node struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	str  string
	num  json.Number
	b    bool
	keys []string // object keys, in order
	vals []*node  // object values (same order) or array elements
	off  int      // byte offset of the value in the source
	// index maps an object's keys to their place: a scan of keys for
	// each key of an object of 100,000 (decode's check for a duplicate,
	// required) took a minute.
	index map[string]int
}

func (n *node) get(key string) *node {
	if i, ok := n.index[key]; ok {
		return n.vals[i]
	}
	return nil
}

// maxDepth bounds nesting of the schema text.
const maxDepth = 200

// decode reads one JSON document.
func decode(src []byte) (*node, error) {
	d := json.NewDecoder(bytes.NewReader(src))
	d.UseNumber()
	r := &reader{d: d, src: src}
	n, err := r.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, r.errAt(int(d.InputOffset()), "expected the end of the schema after the top-level value")
	}
	return n, nil
}

type reader struct {
	d   *json.Decoder
	src []byte
}

// start is the offset of the next token: past blanks, ',' and ':'.
func (r *reader) start() int {
	i := int(r.d.InputOffset())
	for i < len(r.src) {
		switch r.src[i] {
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
			continue
		}
		break
	}
	return i
}

func (r *reader) errAt(off int, format string, a ...any) error {
	line, col := lineCol(r.src, off)
	return fmt.Errorf("json schema: line %d, col %d: %s", line, col, fmt.Sprintf(format, a...))
}

func lineCol(src []byte, off int) (int, int) {
	line, col := 1, 1
	for i, c := range string(src) {
		if i >= off {
			break
		}
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func (r *reader) token() (json.Token, int, error) {
	off := r.start()
	t, err := r.d.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, 0, r.errAt(int(se.Offset), "%s", se.Error())
		}
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, 0, r.errAt(len(r.src), "unexpected end of the schema")
		}
		return nil, 0, r.errAt(off, "%s", err.Error())
	}
	return t, off, nil
}

func (r *reader) value(depth int) (*node, error) {
	t, off, err := r.token()
	if err != nil {
		return nil, err
	}
	if depth > maxDepth {
		return nil, r.errAt(off, "nested more than %d deep", maxDepth)
	}
	n := &node{off: off}
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{':
			n.kind, n.index = 'o', map[string]int{}
			for r.d.More() {
				kt, koff, err := r.token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, r.errAt(koff, "expected an object key")
				}
				if n.get(k) != nil {
					return nil, r.errAt(koff, "key %s appears twice in this object", quote.Quote(k))
				}
				val, err := r.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.index[k] = len(n.keys)
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, val)
			}
		case '[':
			n.kind = 'a'
			for r.d.More() {
				val, err := r.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, val)
			}
		default:
			return nil, r.errAt(off, "unexpected %q", v)
		}
		if _, _, err := r.token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.kind, n.str = 's', v
	case json.Number:
		n.kind, n.num = 'n', v
	case bool:
		n.kind, n.b = 'b', v
	case nil:
		n.kind = 'z'
	}
	return n, nil
}
