package torchpt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"chat/models/quote"
)

// This file is a restricted pickle machine. It understands the opcodes of
// protocols 0-5 but never imports or calls anything: GLOBAL and friends only
// resolve names from a fixed allow list to Go stand-ins, and REDUCE, NEWOBJ
// and BUILD apply those stand-ins in Go. Every other global is refused at the
// moment it is named, so a hostile pickle fails before it can do anything.

// Python values are kept in these forms while unpickling:
//
//	nil, bool, int64, *big.Int, float64, string, []byte,
//	*pyList, *pyTuple, *pyDict, *pySet, *global, *storageRef, *tensorRef,
//	*npDtype
//
// Containers are pointers so that memo references and in-place APPEND/SETITEM
// behave as in Python and so that conversion can be memoised per object.

type pyList struct{ items []any }

type pyTuple struct {
	items  []any
	hash   string // cached structural key once used as a dict key
	hashed bool
}

// pyBytes is a Python bytes value (immutable, so a string type).
type pyBytes string

// Dict key forms for values that are not comparable as they are.
type (
	tupleKey  string
	bigKey    string
	globalKey string
)

type pySet struct {
	items  []any
	frozen bool
}

type pyDict struct {
	keys  []any
	vals  []any
	index map[any]int // dictKey(key) -> position
}

func newDict() *pyDict { return &pyDict{} }

func (u *unpickler) dictSet(d *pyDict, k, v any) error {
	if err := u.spend(1); err != nil {
		return err
	}
	h, err := u.dictKey(k, 0)
	if err != nil {
		return err
	}
	if d.index == nil {
		d.index = map[any]int{}
	}
	if i, ok := d.index[h]; ok {
		d.vals[i] = v
		return nil
	}
	d.index[h] = len(d.keys)
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	return nil
}

// get looks up a string key.
func (d *pyDict) get(k string) (any, bool) {
	i, ok := d.index[k]
	if !ok {
		return nil, false
	}
	return d.vals[i], true
}

// global is an allow-listed class or function.
type global struct{ module, name string }

func (g *global) String() string { return g.module + "." + g.name }

// storageRef is a persistent id ('storage', type, key, location, numel).
type storageRef struct {
	dtype    string // torch dtype name, e.g. "float32"
	key      string // entry name under data/
	location string
	numel    int64
}

// tensorRef is a rebuilt (not yet materialised) tensor.
type tensorRef struct {
	storage *storageRef
	offset  int64
	size    []int64
	stride  []int64
}

// npDtype is a numpy.dtype under construction (REDUCE then BUILD).
type npDtype struct {
	code      string // "f8", "i4", ...
	bigEndian bool
}

// maxDepth bounds recursion in hashing and conversion of nested values.
const maxDepth = 200

var errStop = errors.New("stop")

// allowed maps "module.name" to the Go stand-in kind.
var allowed = map[string]string{
	"collections.OrderedDict":                    "dict",
	"builtins.dict":                              "dict",
	"__builtin__.dict":                           "dict",
	"builtins.list":                              "list",
	"builtins.set":                               "set",
	"__builtin__.set":                            "set",
	"builtins.frozenset":                         "frozenset",
	"__builtin__.frozenset":                      "frozenset",
	"torch._utils._rebuild_tensor_v2":            "tensor",
	"torch._utils._rebuild_parameter":            "parameter",
	"torch._utils._rebuild_parameter_with_state": "parameter",
	"torch.torch_version.TorchVersion":           "str",
	"torch.Size":                                 "tuple",
	"torch.device":                               "device",
	"_codecs.encode":                             "encode",
	"numpy.core.multiarray.scalar":               "npscalar",
	"numpy._core.multiarray.scalar":              "npscalar",
	"numpy.dtype":                                "npdtype",
	"torch._tensor._rebuild_from_type_v2":        "fromtype",
	// Type markers that _rebuild_from_type_v2 names; never called.
	"torch.Tensor":                 "value",
	"torch._tensor.Tensor":         "value",
	"torch.nn.parameter.Parameter": "value",
}

// torchDtypes are torch.dtype objects: harmless names (e.g. an amp dtype in
// a config), kept as values and never called.
var torchDtypes = map[string]bool{
	"float32": true, "float": true, "float64": true, "double": true, "float16": true, "half": true,
	"bfloat16": true, "int64": true, "long": true, "int32": true, "int": true, "int16": true,
	"short": true, "int8": true, "uint8": true, "bool": true,
}

// storageTypes maps storage classes to torch dtype names.
var storageTypes = map[string]string{
	"torch.FloatStorage":            "float32",
	"torch.DoubleStorage":           "float64",
	"torch.HalfStorage":             "float16",
	"torch.BFloat16Storage":         "bfloat16",
	"torch.LongStorage":             "int64",
	"torch.IntStorage":              "int32",
	"torch.ShortStorage":            "int16",
	"torch.CharStorage":             "int8",
	"torch.ByteStorage":             "uint8",
	"torch.BoolStorage":             "bool",
	"torch.UntypedStorage":          "uint8",
	"torch.storage.UntypedStorage":  "uint8",
	"torch.storage._UntypedStorage": "uint8",
}

func resolveGlobal(module, name string) (*global, error) {
	full := module + "." + name
	if _, ok := allowed[full]; ok {
		return &global{module, name}, nil
	}
	if _, ok := storageTypes[full]; ok {
		return &global{module, name}, nil
	}
	if module == "torch" && torchDtypes[name] {
		return &global{module, name}, nil
	}
	return nil, fmt.Errorf("refusing pickle global %s", quote.Quote(full))
}

type unpickler struct {
	data  []byte
	pos   int
	stack []any
	marks []int
	memo  map[int64]any
	// budget bounds the work that is not paid for by input bytes (hashing
	// long dict keys again and again, copying containers), so a small
	// hostile pickle cannot keep the machine busy for long. Real course
	// checkpoints spend about 5% of their pickle's length.
	budget int64
}

func unpickle(data []byte) (any, error) {
	u := &unpickler{data: data, memo: map[int64]any{}, budget: 4*int64(len(data)) + 1<<18}
	v, err := u.run()
	if err != nil {
		return nil, fmt.Errorf("pickle: %w", err)
	}
	return v, nil
}

func (u *unpickler) spend(n int) error {
	u.budget -= int64(n)
	if u.budget < 0 {
		return fmt.Errorf("pickle too expensive to decode (repeated huge keys or copies)")
	}
	return nil
}

func (u *unpickler) remaining() int { return len(u.data) - u.pos }

func (u *unpickler) read(n int) ([]byte, error) {
	if n < 0 || n > u.remaining() {
		return nil, fmt.Errorf("truncated at byte %d (need %d bytes, have %d)", u.pos, n, u.remaining())
	}
	b := u.data[u.pos : u.pos+n]
	u.pos += n
	return b, nil
}

func (u *unpickler) readLen(width int) (int, error) {
	b, err := u.read(width)
	if err != nil {
		return 0, err
	}
	var n uint64
	switch width {
	case 1:
		n = uint64(b[0])
	case 4:
		n = uint64(binary.LittleEndian.Uint32(b))
	case 8:
		n = binary.LittleEndian.Uint64(b)
	}
	if n > uint64(u.remaining()) {
		return 0, fmt.Errorf("length %d at byte %d exceeds the %d bytes left", n, u.pos, u.remaining())
	}
	return int(n), nil
}

// memoIndex reads the memo index of a PUT/GET opcode: a text line (p, g),
// one byte (q, h) or a 4-byte little-endian number (r, j).
func (u *unpickler) memoIndex(op byte) (int64, error) {
	switch op {
	case 'p', 'g':
		line, err := u.readLine()
		if err != nil {
			return 0, err
		}
		i, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad memo index %s", quote.Quote(line))
		}
		return i, nil
	case 'q', 'h':
		b, err := u.read(1)
		if err != nil {
			return 0, err
		}
		return int64(b[0]), nil
	}
	b, err := u.read(4)
	if err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint32(b)), nil
}

func (u *unpickler) readLine() (string, error) {
	rest := u.data[u.pos:]
	for i, c := range rest {
		if c == '\n' {
			u.pos += i + 1
			return string(rest[:i]), nil
		}
	}
	return "", fmt.Errorf("truncated: no end of line after byte %d", u.pos)
}

func (u *unpickler) push(v any) { u.stack = append(u.stack, v) }

func (u *unpickler) pop() (any, error) {
	n := len(u.stack)
	if n == 0 || (len(u.marks) > 0 && n <= u.marks[len(u.marks)-1]) {
		return nil, fmt.Errorf("stack underflow at byte %d", u.pos)
	}
	v := u.stack[n-1]
	u.stack = u.stack[:n-1]
	return v, nil
}

func (u *unpickler) top() (any, error) {
	n := len(u.stack)
	if n == 0 || (len(u.marks) > 0 && n <= u.marks[len(u.marks)-1]) {
		return nil, fmt.Errorf("stack underflow at byte %d", u.pos)
	}
	return u.stack[n-1], nil
}

// popMark returns the items pushed since the last MARK (a fresh slice).
func (u *unpickler) popMark() ([]any, error) {
	if len(u.marks) == 0 {
		return nil, fmt.Errorf("no MARK on the stack at byte %d", u.pos)
	}
	m := u.marks[len(u.marks)-1]
	u.marks = u.marks[:len(u.marks)-1]
	items := make([]any, len(u.stack)-m)
	copy(items, u.stack[m:])
	clear(u.stack[m:])
	u.stack = u.stack[:m]
	return items, nil
}

func (u *unpickler) memoGet(i int64) error {
	v, ok := u.memo[i]
	if !ok {
		return fmt.Errorf("memo key %d missing at byte %d", i, u.pos)
	}
	u.push(v)
	return nil
}

func (u *unpickler) memoPut(i int64) error {
	v, err := u.top()
	if err != nil {
		return err
	}
	if i < 0 {
		return fmt.Errorf("negative memo key at byte %d", u.pos)
	}
	u.memo[i] = v
	return nil
}

func (u *unpickler) run() (any, error) {
	for {
		if u.pos >= len(u.data) {
			return nil, fmt.Errorf("truncated: no STOP opcode")
		}
		op := u.data[u.pos]
		u.pos++
		if err := u.step(op); err != nil {
			if err == errStop {
				// Like Python, only the top value matters.
				v, err := u.top()
				if err != nil {
					return nil, fmt.Errorf("STOP with an empty stack")
				}
				return v, nil
			}
			return nil, err
		}
	}
}

func (u *unpickler) step(op byte) error {
	switch op {
	case 0x80: // PROTO
		b, err := u.read(1)
		if err != nil {
			return err
		}
		if b[0] > 5 {
			return fmt.Errorf("unsupported pickle protocol %d", b[0])
		}
	case 0x95: // FRAME: only a hint for buffering
		_, err := u.read(8)
		return err
	case '.': // STOP
		return errStop
	case '(': // MARK
		u.marks = append(u.marks, len(u.stack))
	case '0': // POP
		if len(u.marks) > 0 && len(u.stack) == u.marks[len(u.marks)-1] {
			// Python pops the mark in this case.
			u.marks = u.marks[:len(u.marks)-1]
			return nil
		}
		_, err := u.pop()
		return err
	case '1': // POP_MARK
		_, err := u.popMark()
		return err
	case '2': // DUP
		v, err := u.top()
		if err != nil {
			return err
		}
		u.push(v)

	// --- scalars
	case 'N':
		u.push(nil)
	case 0x88: // NEWTRUE
		u.push(true)
	case 0x89: // NEWFALSE
		u.push(false)
	case 'J': // BININT
		b, err := u.read(4)
		if err != nil {
			return err
		}
		u.push(int64(int32(binary.LittleEndian.Uint32(b))))
	case 'K': // BININT1
		b, err := u.read(1)
		if err != nil {
			return err
		}
		u.push(int64(b[0]))
	case 'M': // BININT2
		b, err := u.read(2)
		if err != nil {
			return err
		}
		u.push(int64(binary.LittleEndian.Uint16(b)))
	case 0x8a, 0x8b: // LONG1, LONG4
		w := 1
		if op == 0x8b {
			w = 4
		}
		n, err := u.readLen(w)
		if err != nil {
			return err
		}
		b, _ := u.read(n)
		u.push(decodeLong(b))
	case 'I': // INT (text)
		line, err := u.readLine()
		if err != nil {
			return err
		}
		switch line {
		case "00":
			u.push(false)
			return nil
		case "01":
			u.push(true)
			return nil
		}
		v, err := parseIntText(line)
		if err != nil {
			return err
		}
		u.push(v)
	case 'L': // LONG (text)
		line, err := u.readLine()
		if err != nil {
			return err
		}
		v, err := parseIntText(strings.TrimSuffix(line, "L"))
		if err != nil {
			return err
		}
		u.push(v)
	case 'F': // FLOAT (text)
		line, err := u.readLine()
		if err != nil {
			return err
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
		if err != nil {
			return fmt.Errorf("bad FLOAT %s", quote.Quote(line))
		}
		u.push(f)
	case 'G': // BINFLOAT (big-endian)
		b, err := u.read(8)
		if err != nil {
			return err
		}
		u.push(math.Float64frombits(binary.BigEndian.Uint64(b)))

	// --- strings and bytes
	case 'X', 0x8c, 0x8d: // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
		w := 4
		if op == 0x8c {
			w = 1
		} else if op == 0x8d {
			w = 8
		}
		n, err := u.readLen(w)
		if err != nil {
			return err
		}
		b, _ := u.read(n)
		u.push(toValidUTF8(b))
	case 'V': // UNICODE (raw-unicode-escape text)
		line, err := u.readLine()
		if err != nil {
			return err
		}
		u.push(rawUnicodeUnescape(line))
	case 'S': // STRING (Python repr)
		line, err := u.readLine()
		if err != nil {
			return err
		}
		s, err := unquotePyString(line)
		if err != nil {
			return err
		}
		u.push(s)
	case 'T', 'U': // BINSTRING, SHORT_BINSTRING: Python 2 str, decoded as latin-1 text
		w := 4
		if op == 'U' {
			w = 1
		}
		n, err := u.readLen(w)
		if err != nil {
			return err
		}
		b, _ := u.read(n)
		u.push(latin1(b))
	case 'B', 'C', 0x8e, 0x96: // BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
		w := 4
		switch op {
		case 'C':
			w = 1
		case 0x8e, 0x96:
			w = 8
		}
		n, err := u.readLen(w)
		if err != nil {
			return err
		}
		b, _ := u.read(n)
		u.push(pyBytes(b))
	case 0x97: // NEXT_BUFFER
		return fmt.Errorf("out-of-band pickle buffers are not supported")
	case 0x98: // READONLY_BUFFER: no-op for our purposes
		_, err := u.top()
		return err

	// --- containers
	case ')':
		u.push(&pyTuple{})
	case 0x85, 0x86, 0x87: // TUPLE1..3
		n := int(op-0x85) + 1
		items := make([]any, n)
		for i := n - 1; i >= 0; i-- {
			v, err := u.pop()
			if err != nil {
				return err
			}
			items[i] = v
		}
		u.push(&pyTuple{items: items})
	case 't': // TUPLE
		items, err := u.popMark()
		if err != nil {
			return err
		}
		u.push(&pyTuple{items: items})
	case ']':
		u.push(&pyList{})
	case 'l': // LIST
		items, err := u.popMark()
		if err != nil {
			return err
		}
		u.push(&pyList{items: items})
	case 'a': // APPEND
		v, err := u.pop()
		if err != nil {
			return err
		}
		return u.appendTo([]any{v})
	case 'e': // APPENDS
		items, err := u.popMark()
		if err != nil {
			return err
		}
		return u.appendTo(items)
	case '}':
		u.push(newDict())
	case 'd': // DICT
		items, err := u.popMark()
		if err != nil {
			return err
		}
		d := newDict()
		if err := u.setItems(d, items); err != nil {
			return err
		}
		u.push(d)
	case 's': // SETITEM
		v, err := u.pop()
		if err != nil {
			return err
		}
		k, err := u.pop()
		if err != nil {
			return err
		}
		return u.setItemsOnTop([]any{k, v})
	case 'u': // SETITEMS
		items, err := u.popMark()
		if err != nil {
			return err
		}
		return u.setItemsOnTop(items)
	case 0x8f: // EMPTY_SET
		u.push(&pySet{})
	case 0x90: // ADDITEMS
		items, err := u.popMark()
		if err != nil {
			return err
		}
		t, err := u.top()
		if err != nil {
			return err
		}
		s, ok := t.(*pySet)
		if !ok || s.frozen {
			return fmt.Errorf("ADDITEMS on %s", typeName(t))
		}
		s.items = append(s.items, items...)
	case 0x91: // FROZENSET
		items, err := u.popMark()
		if err != nil {
			return err
		}
		u.push(&pySet{items: items, frozen: true})

	// --- memo
	case 'p', 'q', 'r': // PUT, BINPUT, LONG_BINPUT
		i, err := u.memoIndex(op)
		if err != nil {
			return err
		}
		return u.memoPut(i)
	case 0x94: // MEMOIZE
		return u.memoPut(int64(len(u.memo)))
	case 'g', 'h', 'j': // GET, BINGET, LONG_BINGET
		i, err := u.memoIndex(op)
		if err != nil {
			return err
		}
		return u.memoGet(i)

	// --- globals and object construction
	case 'c': // GLOBAL "module\nname\n"
		module, err := u.readLine()
		if err != nil {
			return err
		}
		name, err := u.readLine()
		if err != nil {
			return err
		}
		g, err := resolveGlobal(module, name)
		if err != nil {
			return err
		}
		u.push(g)
	case 0x93: // STACK_GLOBAL
		name, err := u.pop()
		if err != nil {
			return err
		}
		module, err := u.pop()
		if err != nil {
			return err
		}
		ms, ok1 := module.(string)
		ns, ok2 := name.(string)
		if !ok1 || !ok2 {
			return fmt.Errorf("STACK_GLOBAL needs two strings, got %s and %s", typeName(module), typeName(name))
		}
		g, err := resolveGlobal(ms, ns)
		if err != nil {
			return err
		}
		u.push(g)
	case 'i': // INST "module\nname\n" with args since MARK
		module, err := u.readLine()
		if err != nil {
			return err
		}
		name, err := u.readLine()
		if err != nil {
			return err
		}
		g, err := resolveGlobal(module, name)
		if err != nil {
			return err
		}
		args, err := u.popMark()
		if err != nil {
			return err
		}
		v, err := u.call(g, args)
		if err != nil {
			return err
		}
		u.push(v)
	case 'o': // OBJ: class and args since MARK
		items, err := u.popMark()
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return fmt.Errorf("OBJ without a class")
		}
		g, ok := items[0].(*global)
		if !ok {
			return fmt.Errorf("OBJ on %s", typeName(items[0]))
		}
		v, err := u.call(g, items[1:])
		if err != nil {
			return err
		}
		u.push(v)
	case 0x82, 0x83, 0x84: // EXT1, EXT2, EXT4
		return fmt.Errorf("refusing pickle extension code (copyreg registry) at byte %d", u.pos-1)
	case 'R': // REDUCE
		args, err := u.pop()
		if err != nil {
			return err
		}
		f, err := u.pop()
		if err != nil {
			return err
		}
		v, err := u.callWith(f, args)
		if err != nil {
			return err
		}
		u.push(v)
	case 0x81: // NEWOBJ cls.__new__(cls, *args)
		args, err := u.pop()
		if err != nil {
			return err
		}
		cls, err := u.pop()
		if err != nil {
			return err
		}
		v, err := u.callWith(cls, args)
		if err != nil {
			return err
		}
		u.push(v)
	case 0x92: // NEWOBJ_EX cls, args, kwargs
		kw, err := u.pop()
		if err != nil {
			return err
		}
		args, err := u.pop()
		if err != nil {
			return err
		}
		cls, err := u.pop()
		if err != nil {
			return err
		}
		if d, ok := kw.(*pyDict); !ok || len(d.keys) != 0 {
			return fmt.Errorf("NEWOBJ_EX with keyword arguments is not supported")
		}
		v, err := u.callWith(cls, args)
		if err != nil {
			return err
		}
		u.push(v)
	case 'b': // BUILD
		state, err := u.pop()
		if err != nil {
			return err
		}
		obj, err := u.top()
		if err != nil {
			return err
		}
		return build(obj, state)
	case 'P': // PERSID (text)
		line, err := u.readLine()
		if err != nil {
			return err
		}
		return fmt.Errorf("unsupported text persistent id %s", quote.Quote(line))
	case 'Q': // BINPERSID
		pid, err := u.pop()
		if err != nil {
			return err
		}
		s, err := persistentLoad(pid)
		if err != nil {
			return err
		}
		u.push(s)
	default:
		return fmt.Errorf("unknown pickle opcode 0x%02x at byte %d", op, u.pos-1)
	}
	return nil
}

func (u *unpickler) appendTo(items []any) error {
	t, err := u.top()
	if err != nil {
		return err
	}
	switch l := t.(type) {
	case *pyList:
		l.items = append(l.items, items...)
		return nil
	}
	return fmt.Errorf("APPEND on %s", typeName(t))
}

func (u *unpickler) setItemsOnTop(items []any) error {
	t, err := u.top()
	if err != nil {
		return err
	}
	d, ok := t.(*pyDict)
	if !ok {
		return fmt.Errorf("SETITEM on %s", typeName(t))
	}
	return u.setItems(d, items)
}

func (u *unpickler) setItems(d *pyDict, items []any) error {
	if len(items)%2 != 0 {
		return fmt.Errorf("odd number of items (%d) for a dict", len(items))
	}
	for i := 0; i < len(items); i += 2 {
		if err := u.dictSet(d, items[i], items[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func (u *unpickler) callWith(f, args any) (any, error) {
	t, ok := args.(*pyTuple)
	if !ok {
		return nil, fmt.Errorf("call arguments are %s, not a tuple", typeName(args))
	}
	g, ok := f.(*global)
	if !ok {
		return nil, fmt.Errorf("cannot call %s", typeName(f))
	}
	return u.call(g, t.items)
}

// call applies an allow-listed constructor in Go.
func (u *unpickler) call(g *global, args []any) (any, error) {
	full := g.String()
	if _, ok := storageTypes[full]; ok {
		return nil, fmt.Errorf("cannot construct %s outside a persistent id", quote.Quote(full))
	}
	bad := func(why string) error {
		return fmt.Errorf("%s: %s", quote.Quote(full), why)
	}
	switch allowed[full] {
	case "dict":
		d := newDict()
		if len(args) == 0 {
			return d, nil
		}
		if len(args) == 1 {
			switch a := args[0].(type) {
			case *pyDict:
				for i := range a.keys {
					if err := u.dictSet(d, a.keys[i], a.vals[i]); err != nil {
						return nil, err
					}
				}
				return d, nil
			case *pyList, *pyTuple:
				for _, it := range seqItems(a) {
					kv := seqItems(it)
					if len(kv) != 2 {
						return nil, bad("items must be pairs")
					}
					if err := u.dictSet(d, kv[0], kv[1]); err != nil {
						return nil, err
					}
				}
				return d, nil
			}
		}
		return nil, bad("unsupported arguments")
	case "list", "set", "frozenset", "tuple":
		var items []any
		if len(args) > 1 {
			return nil, bad("too many arguments")
		}
		if len(args) == 1 {
			if args[0] != nil {
				its := seqItems(args[0])
				if its == nil {
					if _, ok := args[0].(*pyDict); !ok && !isEmptySeq(args[0]) {
						return nil, bad("argument is not a sequence")
					}
				}
				if err := u.spend(len(its)); err != nil {
					return nil, err
				}
				items = append(items, its...)
			}
		}
		switch allowed[full] {
		case "list":
			return &pyList{items: items}, nil
		case "tuple":
			return &pyTuple{items: items}, nil
		}
		return &pySet{items: items, frozen: allowed[full] == "frozenset"}, nil
	case "str":
		if len(args) == 0 {
			return "", nil
		}
		s, ok := args[0].(string)
		if !ok {
			return nil, bad("argument is not a string")
		}
		return s, nil
	case "device":
		if len(args) == 0 {
			return nil, bad("no arguments")
		}
		s, ok := args[0].(string)
		if !ok {
			return nil, bad("argument is not a string")
		}
		if len(args) > 1 {
			if i, ok := args[1].(int64); ok {
				s = fmt.Sprintf("%s:%d", s, i)
			}
		}
		return s, nil
	case "encode":
		if len(args) == 0 {
			return nil, bad("no arguments")
		}
		s, ok := args[0].(string)
		if !ok {
			if b, ok := args[0].(pyBytes); ok {
				return b, nil
			}
			return nil, bad("argument is not a string")
		}
		enc := "utf-8"
		if len(args) > 1 {
			e, ok := args[1].(string)
			if !ok {
				return nil, bad("encoding is not a string")
			}
			enc = strings.ToLower(strings.ReplaceAll(e, "_", "-"))
		}
		switch enc {
		case "latin1", "latin-1", "iso-8859-1", "iso8859-1", "l1":
			out := make([]byte, 0, len(s))
			for _, r := range s {
				if r > 255 {
					return nil, bad("character outside latin-1")
				}
				out = append(out, byte(r))
			}
			return pyBytes(out), nil
		case "utf-8", "utf8":
			return pyBytes(s), nil
		}
		return nil, bad(fmt.Sprintf("unsupported encoding %s", quote.Quote(enc)))
	case "tensor":
		return rebuildTensor(args)
	case "fromtype":
		// _rebuild_from_type_v2(func, new_type, args, state): a tensor
		// subclass or a tensor with attributes; the attributes are dropped.
		if len(args) < 3 {
			return nil, bad("want (func, type, args, state)")
		}
		f, ok := args[0].(*global)
		if !ok {
			return nil, bad("func is not an allowed global")
		}
		if kind := allowed[f.String()]; kind != "tensor" && kind != "parameter" {
			return nil, bad("func " + quote.Quote(f.String()) + " does not rebuild a tensor")
		}
		if _, ok := args[1].(*global); !ok {
			return nil, bad("type is not an allowed global")
		}
		return u.callWith(f, args[2])
	case "parameter":
		if len(args) == 0 {
			return nil, bad("no arguments")
		}
		t, ok := args[0].(*tensorRef)
		if !ok {
			return nil, bad("data is not a tensor")
		}
		return t, nil
	case "npdtype":
		if len(args) == 0 {
			return nil, bad("no arguments")
		}
		s, ok := args[0].(string)
		if !ok {
			return nil, bad("argument is not a string")
		}
		return &npDtype{code: s}, nil
	case "npscalar":
		if len(args) != 2 {
			return nil, bad("want (dtype, bytes)")
		}
		dt, ok := args[0].(*npDtype)
		if !ok {
			return nil, bad("first argument is not a numpy dtype")
		}
		var b []byte
		switch x := args[1].(type) {
		case pyBytes:
			b = []byte(x)
		case string:
			b = []byte(latin1Bytes(x))
		default:
			return nil, bad("second argument is not bytes")
		}
		return npScalar(dt, b)
	}
	return nil, fmt.Errorf("refusing to call %s", quote.Quote(full))
}

func isEmptySeq(v any) bool {
	switch s := v.(type) {
	case *pyList:
		return len(s.items) == 0
	case *pyTuple:
		return len(s.items) == 0
	case *pySet:
		return len(s.items) == 0
	}
	return false
}

func seqItems(v any) []any {
	switch s := v.(type) {
	case *pyList:
		return s.items
	case *pyTuple:
		return s.items
	case *pySet:
		return s.items
	}
	return nil
}

// build applies BUILD state. Only harmless attribute state is accepted, and
// it is ignored except for what numpy dtypes need.
func build(obj, state any) error {
	switch o := obj.(type) {
	case *pyDict:
		// OrderedDict state dicts carry {'_metadata': ...}: attributes, not items.
		return nil
	case *tensorRef:
		return nil
	case *npDtype:
		t, ok := state.(*pyTuple)
		if ok && len(t.items) > 1 {
			if s, ok := t.items[1].(string); ok && s == ">" {
				o.bigEndian = true
			}
		}
		return nil
	}
	return fmt.Errorf("BUILD on %s is not supported", typeName(obj))
}

func rebuildTensor(args []any) (any, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: want at least 4 arguments, got %d", len(args))
	}
	st, ok := args[0].(*storageRef)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: storage is %s", typeName(args[0]))
	}
	off, ok := args[1].(int64)
	if !ok || off < 0 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: bad storage offset %s", short(args[1]))
	}
	size, err := intTuple(args[2])
	if err != nil {
		return nil, fmt.Errorf("_rebuild_tensor_v2: size: %w", err)
	}
	stride, err := intTuple(args[3])
	if err != nil {
		return nil, fmt.Errorf("_rebuild_tensor_v2: stride: %w", err)
	}
	if len(size) != len(stride) {
		return nil, fmt.Errorf("_rebuild_tensor_v2: size has %d dims but stride has %d", len(size), len(stride))
	}
	return &tensorRef{storage: st, offset: off, size: size, stride: stride}, nil
}

func intTuple(v any) ([]int64, error) {
	var items []any
	switch t := v.(type) {
	case *pyTuple:
		items = t.items
	case *pyList:
		items = t.items
	default:
		return nil, fmt.Errorf("%s is not a tuple", typeName(v))
	}
	out := make([]int64, len(items))
	for i, it := range items {
		n, ok := it.(int64)
		if !ok || n < 0 {
			return nil, fmt.Errorf("element %d is %s, not a non-negative int", i, short(it))
		}
		out[i] = n
	}
	return out, nil
}

func persistentLoad(pid any) (any, error) {
	t, ok := pid.(*pyTuple)
	if !ok || len(t.items) < 5 {
		return nil, fmt.Errorf("unsupported persistent id %s", typeName(pid))
	}
	if s, _ := t.items[0].(string); s != "storage" {
		return nil, fmt.Errorf("unsupported persistent id kind %s", short(t.items[0]))
	}
	g, ok := t.items[1].(*global)
	if !ok {
		return nil, fmt.Errorf("persistent id storage type is %s", typeName(t.items[1]))
	}
	dt, ok := storageTypes[g.String()]
	if !ok {
		return nil, fmt.Errorf("unsupported storage type %s", quote.Quote(g.String()))
	}
	key, ok := t.items[2].(string)
	if !ok {
		return nil, fmt.Errorf("storage key is %s, not a string", typeName(t.items[2]))
	}
	loc, _ := t.items[3].(string)
	n, ok := t.items[4].(int64)
	if !ok || n < 0 {
		return nil, fmt.Errorf("storage %s: bad element count %s", quote.Quote(key), short(t.items[4]))
	}
	return &storageRef{dtype: dt, key: key, location: loc, numel: n}, nil
}

func npScalar(dt *npDtype, b []byte) (any, error) {
	code := strings.TrimLeft(dt.code, "<>=|")
	var order binary.ByteOrder = binary.LittleEndian
	if dt.bigEndian || strings.HasPrefix(dt.code, ">") {
		order = binary.BigEndian
	}
	need := map[string]int{"f8": 8, "f4": 4, "f2": 2, "i8": 8, "i4": 4, "i2": 2, "i1": 1,
		"u8": 8, "u4": 4, "u2": 2, "u1": 1, "b1": 1}[code]
	if need == 0 {
		return nil, fmt.Errorf("numpy scalar of dtype %s is not supported", quote.Quote(dt.code))
	}
	if len(b) != need {
		return nil, fmt.Errorf("numpy scalar %s: %d bytes, want %d", code, len(b), need)
	}
	switch code {
	case "f8":
		return math.Float64frombits(order.Uint64(b)), nil
	case "f4":
		return float64(math.Float32frombits(order.Uint32(b))), nil
	case "f2":
		return float64(halfToFloat(order.Uint16(b))), nil
	case "i8":
		return int64(order.Uint64(b)), nil
	case "i4":
		return int64(int32(order.Uint32(b))), nil
	case "i2":
		return int64(int16(order.Uint16(b))), nil
	case "i1":
		return int64(int8(b[0])), nil
	case "u8":
		v := order.Uint64(b)
		if v > math.MaxInt64 {
			return new(big.Int).SetUint64(v), nil
		}
		return int64(v), nil
	case "u4":
		return int64(order.Uint32(b)), nil
	case "u2":
		return int64(order.Uint16(b)), nil
	case "u1":
		return int64(b[0]), nil
	}
	return b[0] != 0, nil // b1
}

// decodeLong decodes a little-endian two's complement integer.
func decodeLong(b []byte) any {
	if len(b) == 0 {
		return int64(0)
	}
	if len(b) <= 8 {
		var v uint64
		for i := len(b) - 1; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		shift := uint(64 - 8*len(b))
		return int64(v<<shift) >> shift
	}
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i]
	}
	v := new(big.Int).SetBytes(be)
	if b[len(b)-1]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	if v.IsInt64() {
		return v.Int64()
	}
	return v
}

func parseIntText(s string) (any, error) {
	s = strings.TrimSpace(s)
	if len(s) > 4300 { // Python's own int/str conversion limit
		return nil, fmt.Errorf("integer literal of %d digits is too long", len(s))
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, fmt.Errorf("bad integer %s", quote.Quote(s))
	}
	return v, nil
}

func toValidUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

func latin1(b []byte) string {
	ascii := true
	for _, c := range b {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b)
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// latin1Bytes maps code points 0-255 back to bytes (others become '?').
func latin1Bytes(s string) string {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 255 {
			r = '?'
		}
		out = append(out, byte(r))
	}
	return string(out)
}

// rawUnicodeUnescape decodes Python's raw-unicode-escape (\uXXXX, \UXXXXXXXX).
func rawUnicodeUnescape(s string) string {
	if !strings.Contains(s, "\\") {
		return toValidUTF8([]byte(latin1([]byte(s))))
	}
	var sb strings.Builder
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+1 < len(b) && (b[i+1] == 'u' || b[i+1] == 'U') {
			n := 4
			if b[i+1] == 'U' {
				n = 8
			}
			if i+2+n <= len(b) {
				if v, err := strconv.ParseUint(string(b[i+2:i+2+n]), 16, 32); err == nil {
					r := rune(v)
					if !utf8.ValidRune(r) {
						r = utf8.RuneError
					}
					sb.WriteRune(r)
					i += 1 + n
					continue
				}
			}
		}
		sb.WriteRune(rune(b[i]))
	}
	return sb.String()
}

// unquotePyString decodes the repr of a Python 2 str as written by STRING.
func unquotePyString(s string) (string, error) {
	s = strings.TrimRight(s, " \r")
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') || s[len(s)-1] != s[0] {
		return "", fmt.Errorf("bad STRING argument %s", quote.Quote(s))
	}
	body := s[1 : len(s)-1]
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' || i+1 >= len(body) {
			out = append(out, c)
			continue
		}
		i++
		switch e := body[i]; e {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'a':
			out = append(out, 7)
		case 'b':
			out = append(out, 8)
		case 'f':
			out = append(out, 12)
		case 'v':
			out = append(out, 11)
		case 'x':
			if i+3 <= len(body) {
				if v, err := strconv.ParseUint(body[i+1:i+3], 16, 8); err == nil {
					out = append(out, byte(v))
					i += 2
					continue
				}
			}
			out = append(out, '\\', 'x')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(body) && j < i+3 && body[j] >= '0' && body[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(body[i:j], 8, 16)
			out = append(out, byte(v))
			i = j - 1
		default:
			out = append(out, e)
		}
	}
	return latin1(out), nil
}

// short describes a value for an error message without printing big data.
func short(v any) string {
	switch x := v.(type) {
	case nil, bool, int64, float64:
		return fmt.Sprint(x)
	case string:
		return quote.Quote(x)
	}
	return typeName(v)
}

// dictKey gives a dict key's identity as a comparable Go value;
// unhashable values are an error as in Python.
func (u *unpickler) dictKey(k any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("dict key nested too deeply")
	}
	switch v := k.(type) {
	case nil, int64:
		return k, nil
	case string:
		return k, u.spend(len(v))
	case pyBytes:
		return k, u.spend(len(v))
	case bool:
		if v {
			return int64(1), nil
		}
		return int64(0), nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e18 {
			return int64(v), nil
		}
		return k, nil
	case *big.Int:
		b := v.Bytes()
		if err := u.spend(len(b)); err != nil {
			return nil, err
		}
		return bigKey(fmt.Sprint(v.Sign()) + string(b)), nil
	case *global:
		return globalKey(v.String()), nil
	case *tensorRef, *storageRef:
		return k, nil // hashable by identity
	case *pyTuple:
		if v.hashed {
			return tupleKey(v.hash), u.spend(len(v.hash))
		}
		var sb strings.Builder
		sb.WriteString(strconv.Itoa(len(v.items)))
		for _, it := range v.items {
			h, err := u.dictKey(it, depth+1)
			if err != nil {
				return nil, err
			}
			part := fmt.Sprintf("%T", h)
			switch x := h.(type) {
			case string:
				part += ":" + x
			case pyBytes:
				part += ":" + string(x)
			case tupleKey:
				part += ":" + string(x)
			case bigKey:
				part += ":" + string(x)
			case globalKey:
				part += ":" + string(x)
			case *tensorRef, *storageRef:
				part += fmt.Sprintf(":%p", x)
			default:
				part += fmt.Sprint(":", x)
			}
			if err := u.spend(len(part)); err != nil {
				return nil, err
			}
			sb.WriteString("|")
			sb.WriteString(strconv.Itoa(len(part)))
			sb.WriteString("|")
			sb.WriteString(part)
		}
		v.hash, v.hashed = sb.String(), true
		return tupleKey(v.hash), nil
	}
	return nil, fmt.Errorf("unhashable dict key of type %s", typeName(k))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int64, *big.Int:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case pyBytes:
		return "bytes"
	case *pyList:
		return "list"
	case *pyTuple:
		return "tuple"
	case *pyDict:
		return "dict"
	case *pySet:
		return "set"
	case *global:
		return "global " + v.(*global).String()
	case *storageRef:
		return "storage"
	case *tensorRef:
		return "tensor"
	case *npDtype:
		return "numpy.dtype"
	}
	return fmt.Sprintf("%T", v)
}
