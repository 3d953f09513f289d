package chattmpl

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unsafe"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// gonja has no hooks for operators, outputs or loop turns, so after parsing
// the template tree is rewritten to call these guards, which charge the
// render's budget before anything large is built:
//
//   - every body (the template, each loop turn, macro, if branch, block) starts
//     with enter(n): one step, and n bytes for its literal text;
//   - every {{ output }} and slice becomes new(x), which charges x's size;
//   - the object of a slice becomes cost(x), and that of a for loop iter(x):
//     gonja copies a sliced string as runes, and makes a context per loop
//     item before the first turn, so these are charged before they happen
//     (iter(x, "tools") also refuses to loop over tools or documents when
//     they are none, as Python does);
//   - a + b, a * b and a ~ b become op(a, b, "+"), computed by gonja itself
//     once the result's size is known to fit;
//   - {% set ns.attr = x %} becomes set(ns, x), which refuses a value that
//     would contain ns (a value that contains itself recurses without end
//     when written out);
//   - each read of the name loop becomes loop(loop) (guardedLoop): a
//     recursive for loop's loop(items), like a macro, fails beyond
//     maxMacroDepth nested calls.
//
// Filters and methods are wrapped the same way (guardFilters, guardMethods);
// methods that change a list or dict in place are left out, as in
// transformers' ImmutableSandboxedEnvironment.
const (
	enterFunc = "__chattmpl_enter"
	newFunc   = "__chattmpl_new"
	opFunc    = "__chattmpl_op"
	setFunc   = "__chattmpl_set"
	iterFunc  = "__chattmpl_iter"
	costFunc  = "__chattmpl_cost"
	loopFunc  = "__chattmpl_loop"

	loopItemBytes = 2048          // what gonja allocates per loop item (measured: about 2.2 KB)
	guardName     = "__chattmpl_" // template names with this prefix are refused
)

// guardFuncs are the guards as context functions of a template whose
// renders spend b.
func guardFuncs(b *budget) map[string]any {
	return map[string]any{
		enterFunc: func(p *exec.VarArgs) (*exec.Value, error) {
			n := 0
			if len(p.Args) == 1 {
				n = max(p.Args[0].Integer(), 0)
			}
			return exec.AsValue(""), b.spend(int64(n))
		},
		newFunc: func(p *exec.VarArgs) (*exec.Value, error) {
			if len(p.Args) != 1 {
				return nil, errors.New(newFunc + " takes one argument")
			}
			return p.Args[0], b.charge(p.Args[0])
		},
		opFunc: func(e *exec.Evaluator, p *exec.VarArgs) (*exec.Value, error) {
			return b.op(e, p)
		},
		iterFunc: func(e *exec.Evaluator, p *exec.VarArgs) (*exec.Value, error) {
			if len(p.Args) == 2 && p.Args[0].IsNil() && e.Environment.Context.Has(p.Args[1].String()) {
				return nil, errors.New("'NoneType' object is not iterable") // gonja would iterate none as undefined: nothing
			}
			if len(p.Args) != 1 && len(p.Args) != 2 {
				return nil, errors.New(iterFunc + " takes one or two arguments")
			}
			n := int64(items(p.Args[0]))
			b.steps -= int(min(n, int64(renderLimits.steps)+1))
			return p.Args[0], b.spend(n * loopItemBytes)
		},
		costFunc: func(p *exec.VarArgs) (*exec.Value, error) {
			if len(p.Args) != 1 {
				return nil, errors.New(costFunc + " takes one argument")
			}
			per := int64(16)
			if p.Args[0].IsString() {
				per = 32
			}
			return p.Args[0], b.spend(per * int64(items(p.Args[0])))
		},
		setFunc: func(p *exec.VarArgs) (*exec.Value, error) {
			if len(p.Args) != 2 {
				return nil, errors.New(setFunc + " takes two arguments")
			}
			if err := b.step(); err != nil {
				return nil, err
			}
			target := p.Args[0].Val
			for target.IsValid() && (target.Kind() == reflect.Pointer || target.Kind() == reflect.Interface) && !target.IsNil() {
				target = target.Elem()
			}
			if target.IsValid() && target.Kind() == reflect.Map && reaches(p.Args[1].Val, uintptr(target.UnsafePointer()), 0, map[uintptr]bool{}) {
				return nil, fmt.Errorf("chattmpl: chat template makes a value that contains itself (or is nested more than %d deep)", maxValueDepth)
			}
			return p.Args[1], nil
		},
	}
}

// noneVars are the variables transformers sets to None (tools,
// documents): a loop over one of them fails, as in Python, where gonja,
// which has no none distinct from undefined, would loop zero times.
var noneVars = map[string]bool{"tools": true, "documents": true}

// items is the number of items of a string (bytes), list or dict, without
// converting a string to runes as gonja's Len does.
func items(v *exec.Value) int {
	switch {
	case v.IsString():
		return len(v.String())
	case v.IsList() || v.IsDict():
		return v.Len()
	}
	return 1
}

// charge charges the size of v, a value just built, refusing one larger
// than a value may be.
func (b *budget) charge(v *exec.Value) error {
	w, err := weight(v, b.maxValue+1)
	if err != nil {
		b.err = err
		return err
	}
	return b.fits(w)
}

var binOps = map[string]*nodes.BinOperator{
	"+": {Token: &tokens.Token{Type: tokens.Addition, Val: "+"}},
	"*": {Token: &tokens.Token{Type: tokens.Multiply, Val: "*"}},
	"~": {Token: &tokens.Token{Type: tokens.Tilde, Val: "~"}},
}

// binOpName is the binOps key of the operator of token type t, or "".
func binOpName(t tokens.Type) string {
	for name, o := range binOps {
		if o.Token.Type == t {
			return name
		}
	}
	return ""
}

// op computes l OP r with gonja's own semantics after checking the size of
// what it builds: a string repeated, strings or lists joined.
func (b *budget) op(e *exec.Evaluator, p *exec.VarArgs) (*exec.Value, error) {
	if len(p.Args) != 3 || binOps[p.Args[2].String()] == nil {
		return nil, errors.New(opFunc + " takes two operands and an operator")
	}
	l, r, op := p.Args[0], p.Args[1], p.Args[2].String()
	if op != "~" && (l.IsNil() || r.IsNil()) {
		// Python: TypeError for none, UndefinedError for undefined (gonja
		// would take it as "" or 0).
		return nil, fmt.Errorf("unsupported operand for %s: none or undefined", op)
	}
	switch {
	case l.IsFloat() || r.IsFloat():
		// a number
	case op == "*" && l.IsString():
		k := int64(r.Integer())
		if k <= 0 {
			return exec.AsValue(""), b.step() // Python: 'a' * -1 == ''
		}
		if k > b.maxValue {
			return nil, b.fits(b.maxValue + 1)
		}
		if err := b.fits(int64(len(l.String())) * k); err != nil {
			return nil, err
		}
	case op == "~" || l.IsString() || r.IsString() || l.IsList():
		wl, err := weight(l, b.maxValue+1)
		if err == nil {
			var wr int64
			wr, err = weight(r, b.maxValue+1)
			wl += wr
		}
		if err != nil {
			b.err = err
			return nil, err
		}
		if wl > b.maxValue {
			return nil, b.fits(wl)
		}
		size := wl // a new string
		if l.IsList() && r.IsList() {
			size = 16 * int64(l.Len()+r.Len()) // a new list sharing the items
		}
		if err := b.spend(size); err != nil {
			return nil, err
		}
	}
	if err := b.step(); err != nil {
		return nil, err
	}
	return evalIn(e, map[string]any{"l": l.Interface(), "r": r.Interface()},
		&nodes.BinaryExpression{Left: nameNode("l"), Right: nameNode("r"), Operator: binOps[op]})
}

// guardTree rewrites a parsed template to call the guards (see above). It
// walks gonja's node structs by reflection, unexported fields included:
// control structures keep their expressions in unexported fields, and the
// guards must see those too.
//
// It also takes the branches of the rewritten conditionals out of their
// calls (see condFunc), and returns them.
func guardTree(root *nodes.Template) [][2]nodes.Expression {
	w := &treeWalker{seen: map[uintptr]bool{}, tested: map[*nodes.Name]bool{}}
	w.pointer(reflect.ValueOf(root))
	return w.branches
}

type treeWalker struct {
	seen     map[uintptr]bool
	branches [][2]nodes.Expression
	tested   map[*nodes.Name]bool // names a test reads ("loop is defined"): testFunc needs the name
}

var (
	setType     = reflect.TypeFor[controlStructures.SetControlStructure]()
	callType    = reflect.TypeFor[nodes.Call]()
	forType     = reflect.TypeFor[controlStructures.ForControlStructure]()
	outputType  = reflect.TypeFor[nodes.Output]()
	wrapperType = reflect.TypeFor[nodes.Wrapper]()
	rootType    = reflect.TypeFor[nodes.Template]()
	tokenType   = reflect.TypeFor[tokens.Token]()
	testType    = reflect.TypeFor[nodes.TestExpression]()
)

// pointer walks the struct p points to, once.
func (w *treeWalker) pointer(p reflect.Value) {
	if p.IsNil() || p.Elem().Kind() != reflect.Struct || p.Elem().Type() == tokenType {
		return
	}
	if pkg := p.Elem().Type().PkgPath(); !strings.Contains(pkg, "gonja") && !strings.HasSuffix(pkg, "/chattmpl") {
		return
	}
	if w.seen[p.Pointer()] {
		return
	}
	w.seen[p.Pointer()] = true
	w.structure(p.Elem())
}

func (w *treeWalker) structure(s reflect.Value) {
	if s.Type() == testType {
		if x, ok := s.FieldByName("Expression").Interface().(*nodes.Name); ok {
			w.tested[x] = true
		}
	}
	for i := 0; i < s.NumField(); i++ {
		if s.Type() == setType && s.Type().Field(i).Name == "target" {
			continue // assigned to, not read: no subscript call there
		}
		w.slot(field(s, i))
	}
	switch s.Type() {
	case callType:
		// A method's object is what it is called on, also when gonja's
		// parser leaves it out: "(x | f).m()" has no Parent, and is "not
		// callable".
		if g, ok := s.FieldByName("Func").Interface().(*nodes.GetAttribute); ok && g.Attribute != "" {
			s.FieldByName("Parent").Set(reflect.ValueOf(g.Node))
		}
	case outputType:
		for _, name := range []string{"Expression", "Alternative"} {
			if f := s.FieldByName(name); !f.IsNil() {
				f.Set(reflect.ValueOf(guardCall(newFunc, f.Interface().(nodes.Expression))))
			}
		}
	case forType:
		f := s.FieldByName("ObjectEvaluator")
		x := f.Interface().(nodes.Expression)
		if n, ok := x.(*nodes.Name); ok && noneVars[n.Name.Val] {
			f.Set(reflect.ValueOf(guardCall(iterFunc, x, &nodes.String{Location: n.Name, Val: n.Name.Val})))
		} else {
			f.Set(reflect.ValueOf(guardCall(iterFunc, x)))
		}
	case wrapperType:
		f := s.FieldByName("Nodes")
		f.Set(reflect.ValueOf(withEnter(f.Interface().([]nodes.Node), s.FieldByName("Location").Interface().(*tokens.Token))))
	case rootType:
		f := s.FieldByName("Nodes")
		f.Set(reflect.ValueOf(withEnter(f.Interface().([]nodes.Node), nil)))
	case setType:
		target := field(s, fieldIndex(s, "target"))
		var container nodes.Expression
		switch t := target.Interface().(type) {
		case *nodes.GetAttribute:
			container = t.Node
		case *nodes.GetItem:
			container = t.Node
		}
		if container == nil {
			break
		}
		for _, name := range []string{"expression", "alternative"} {
			if f := field(s, fieldIndex(s, name)); !f.IsNil() {
				f.Set(reflect.ValueOf(guardCall(setFunc, container, f.Interface().(nodes.Expression))))
			}
		}
	}
}

// slot walks one field, slice element or map value and replaces the
// operators it holds.
func (w *treeWalker) slot(f reflect.Value) {
	switch f.Kind() {
	case reflect.Pointer:
		w.pointer(f)
	case reflect.Interface:
		if f.IsNil() {
			return
		}
		if f.Elem().Kind() == reflect.Pointer {
			w.pointer(f.Elem())
		}
		var repl nodes.Expression
		switch n := f.Interface().(type) {
		case *nodes.BinaryExpression:
			// By the token's type, as gonja evaluates it: its Val may carry
			// other bytes the lexer took in (a BEL before "*" gives "\a*").
			if op := binOpName(n.Operator.Token.Type); op != "" {
				repl = guardCall(opFunc, n.Left, n.Right, &nodes.String{Location: n.Operator.Token, Val: op})
			}
		case *nodes.Call:
			switch {
			case isGuard(n, condFunc) && len(n.Args) == 3:
				at := n.Args[0].Position()
				id := len(w.branches)
				w.branches = append(w.branches, [2]nodes.Expression{n.Args[1], n.Args[2]})
				n.Args = []nodes.Expression{n.Args[0], &nodes.Integer{Location: at, Val: id}}
			case !isGuard(n, ""):
				repl = guardCall(newFunc, n) // dict(a=x, b=x): as a literal
			}
		case *nodes.List, *nodes.Tuple, *nodes.Dict:
			// A literal can hold one value many times ([a, a]): built in a
			// loop, a value of 2^30 items cost nothing, until an operation
			// outside the guards (==, in, an error quoting the value) walked
			// it for minutes into gigabytes.
			repl = guardCall(newFunc, n.(nodes.Expression))
		case *nodes.TestExpression:
			if x, ok := n.Expression.(*nodes.Name); ok && n.Test != nil && nameTests[n.Test.Name] && len(n.Test.Args) == 0 {
				repl = guardCall(testFunc, x, &nodes.String{Location: x.Name, Val: x.Name.Val}, &nodes.String{Location: x.Name, Val: n.Test.Name})
			}
		case *nodes.Name:
			if n.Name.Val == "loop" && !w.tested[n] {
				repl = guardCall(loopFunc, n)
			}
		case *nodes.GetItem:
			if n.Arg != nil {
				repl = guardCall(itemFunc, n.Node, n.Arg)
			}
		case *nodes.GetSlice:
			if !isGuard(n.Node, costFunc) {
				n.Node = guardCall(costFunc, n.Node)
			}
			repl = guardCall(newFunc, n)
		}
		if repl != nil && reflect.TypeOf(repl).AssignableTo(f.Type()) {
			f.Set(reflect.ValueOf(repl))
		}
	case reflect.Slice:
		for i := 0; i < f.Len(); i++ {
			w.slot(f.Index(i))
		}
	case reflect.Map:
		it := f.MapRange()
		for it.Next() {
			v := reflect.New(f.Type().Elem()).Elem()
			v.Set(it.Value())
			w.slot(v)
			f.SetMapIndex(it.Key(), v)
		}
	case reflect.Struct:
		w.structure(f)
	}
}

// isGuard reports whether x is already a call of the guard fn (of any
// guard, for fn "").
func isGuard(x nodes.Node, fn string) bool {
	c, ok := x.(*nodes.Call)
	if !ok {
		return false
	}
	name, ok := c.Func.(*nodes.Name)
	return ok && (name.Name.Val == fn || fn == "" && strings.HasPrefix(name.Name.Val, guardName))
}

// field is s's field i, settable even when unexported.
func field(s reflect.Value, i int) reflect.Value {
	f := s.Field(i)
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

func fieldIndex(s reflect.Value, name string) int {
	f, ok := s.Type().FieldByName(name)
	if !ok {
		panic("chattmpl: gonja's " + s.Type().String() + " has no field " + name)
	}
	return f.Index[0]
}

// guardCall is the call node fn(args...).
func guardCall(fn string, args ...nodes.Expression) *nodes.Call {
	at := args[0].Position()
	if at == nil {
		at = &tokens.Token{Line: 1, Col: 1}
	}
	return &nodes.Call{Location: at, Func: &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: fn, Line: at.Line, Col: at.Col}},
		Args: args, Kwargs: map[string]nodes.Expression{}}
}

// withEnter puts enter(literal bytes) before a body's nodes.
func withEnter(body []nodes.Node, at *tokens.Token) []nodes.Node {
	n := 0
	for _, x := range body {
		if d, ok := x.(*nodes.Data); ok {
			n += len(d.Data.Val)
		}
	}
	if at == nil {
		at = &tokens.Token{Line: 1, Col: 1}
		if len(body) > 0 && body[0].Position() != nil {
			at = body[0].Position()
		}
	}
	arg := &nodes.Integer{Location: &tokens.Token{Type: tokens.Integer, Val: fmt.Sprint(n), Line: at.Line, Col: at.Col}, Val: n}
	enter := &nodes.Output{Start: at, End: at, Expression: guardCall(enterFunc, arg)}
	return append([]nodes.Node{enter}, body...)
}

// Filters and methods whose result can be much larger than their input:
// their size is bounded before they run. The others are charged after.
var growing = map[string]bool{"center": true, "indent": true, "join": true, "wordwrap": true, "batch": true,
	"slice": true, "truncate": true, "tojson": true, "format": true, "format_map": true, "urlize": true,
	"list": true, "ljust": true, "rjust": true, "zfill": true, "expandtabs": true, "splitlines": true}

// filterNames are gonja's filters a chat template may use (a set cannot be
// listed); the rest are left out.
var filterNames = strings.Fields(`abs attr batch capitalize center default d dictsort e escape
	filesizeformat first float forceescape format groupby indent int join items last length count
	list lower map max min pprint random rejectattr reject replace reverse round safe selectattr
	select slice sort string striptags sum title tojson trim truncate unique upper urlencode
	wordcount wordwrap xmlattr`)

// guardFilters wraps every filter so that it spends b.
func guardFilters(base *exec.FilterSet, b *budget) *exec.FilterSet {
	m := map[string]exec.FilterFunction{}
	for _, name := range filterNames {
		fn, ok := base.Get(name)
		if !ok {
			continue
		}
		m[name] = func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			if err := b.before(name, in, p); err != nil {
				return exec.AsValue(err)
			}
			out := fn(e, in, p)
			if out.IsError() {
				return out
			}
			if err := b.charge(out); err != nil {
				return exec.AsValue(err)
			}
			return out
		}
	}
	return exec.NewFilterSet(m)
}

// guardMethods wraps the string methods and keeps the list and dict methods
// that do not change their object.
func guardMethods(base exec.Methods, b *budget) exec.Methods {
	str := map[string]exec.Method[string]{}
	for _, name := range strMethodNames {
		fn, ok := base.Str.Get(name)
		if !ok {
			continue
		}
		str[name] = func(self string, sv *exec.Value, p *exec.VarArgs) (any, error) {
			if err := b.before(name, sv, p); err != nil {
				return nil, err
			}
			out, err := fn(self, sv, p)
			if err != nil {
				return nil, err
			}
			return out, b.charge(exec.AsValue(out))
		}
	}
	list := map[string]exec.Method[[]any]{}
	if fn, ok := base.List.Get("copy"); ok {
		list["copy"] = fn
	}
	dict := map[string]exec.Method[map[string]any]{}
	for _, name := range []string{"keys", "values", "items", "get", "copy"} {
		if fn, ok := base.Dict.Get(name); ok {
			dict[name] = func(self map[string]any, sv *exec.Value, p *exec.VarArgs) (any, error) {
				if err := b.charge(sv); err != nil { // gonja copies the dict for each call
					return nil, err
				}
				out, err := fn(self, sv, p)
				if err != nil {
					return nil, err
				}
				return out, b.charge(exec.AsValue(out))
			}
		}
	}
	base.Str = exec.NewMethodSet(str)
	base.List = exec.NewMethodSet(list)
	base.Dict = exec.NewMethodSet(dict)
	return base
}

// before charges a filter or method call on in: its input (gonja writes the
// object of a method call out for its error message), and for the growing
// ones a bound on their result: the sizes of the input and the arguments
// times their numbers and lengths, a count of replacements for replace.
func (b *budget) before(name string, in *exec.Value, p *exec.VarArgs) error {
	win, err := weight(in, b.maxValue+1)
	if err != nil {
		b.err = err
		return err
	}
	if err := b.fits(win); err != nil { // also refuses an input too large to go through
		return err
	}
	if err := b.spend(runCost(name, in, win)); err != nil {
		return err
	}
	switch {
	case name == "replace":
		return b.fits(replaceSize(in, p))
	case (name == "split" || name == "rsplit") && in.IsString():
		return b.fits(splitSize(in.String(), p))
	}
	if !growing[name] {
		return nil
	}
	size, factor := win+16, int64(6)
	args := append([]*exec.Value(nil), p.Args...)
	for _, v := range p.KwArgs {
		args = append(args, v)
	}
	for _, a := range args {
		wa, err := weight(a, b.maxValue+1)
		if err != nil {
			b.err = err
			return err
		}
		size += wa
		switch {
		case a.IsInteger():
			factor = addSat(factor, abs64(int64(a.Integer())))
		case a.IsString() || a.IsList() || a.IsDict():
			factor = addSat(factor, int64(items(a)))
		}
	}
	if (name == "format" || name == "format_map") && in.IsString() {
		factor += numbersIn(in.String())
	}
	if name == "list" || strings.Contains(name, "split") {
		factor += 16 // one small string per item
	}
	if factor > b.maxValue || size > b.maxValue || size*factor > b.maxValue {
		return b.fits(b.maxValue + 1)
	}
	return b.fits(size * factor)
}

// runCost bounds what gonja allocates as it runs filter or method name on
// in, beyond in and the result (charged on their own); measured by
// TestGuardsChargeWhatTheyAllocate. gonja walks a string one byte at a time
// with a value for each (sort, groupby: several), converts it to runes to
// take its length or an item, and writes a list or dict out as a string for
// a string filter.
func runCost(name string, in *exec.Value, win int64) int64 {
	n := int64(items(in))
	if per, ok := strCost[name]; ok && in.IsString() {
		return per * n
	}
	if per, ok := walkCost[name]; ok {
		return per * n
	}
	if !in.IsString() {
		if name == "replace" {
			return 48 * win // written out twice: replaceSize counts in the text too
		}
		return 32 * win
	}
	return 3 * n
}

// walkCost is the bytes allocated per item by the filters that walk their
// input, a string too unless strCost has the filter; strCost is per byte of
// a string, for the string filters and methods that allocate more than the
// default 3 and those that do not walk a string as they walk a list.
var (
	walkCost = map[string]int64{"groupby": 800, "rejectattr": 400, "reject": 320, "selectattr": 320,
		"map": 340, "select": 224, "join": 224, "sort": 224, "reverse": 240, "batch": 128, "slice": 128,
		"list": 64, "unique": 384, "min": 128, "max": 128, "sum": 128, "tojson": 128, "pprint": 64,
		"dictsort": 128, "items": 128, "first": 8, "last": 12, "random": 12, "length": 4, "count": 4}
	strCost = map[string]int64{"capwords": 40, "title": 8, "capitalize": 8, "upper": 8, "lower": 8,
		"swapcase": 8, "casefold": 8, "striptags": 10, "wordcount": 4, "tojson": 8, "pprint": 8}
)

// replaceSize bounds s.replace(old, new[, count]) without doing it.
func replaceSize(in *exec.Value, p *exec.VarArgs) int64 {
	s := in.String()
	if len(p.Args) < 2 {
		return int64(len(s))
	}
	old, repl := p.Args[0].String(), p.Args[1].String()
	n := int64(len(s)) + 1
	if old != "" {
		n = int64(strings.Count(s, old))
	}
	return int64(len(s)) + n*int64(len(repl))
}

// splitSize bounds s.split(sep[, maxsplit]) without doing it: s, and 64
// bytes a piece (its place in two lists and its value; the pieces share
// s's bytes). The pieces are counted for a separator, and at most half of s
// on whitespace.
func splitSize(s string, p *exec.VarArgs) int64 {
	sep := p.KwArgs["sep"]
	if len(p.Args) > 0 {
		sep = p.Args[0]
	}
	pieces := int64(len(s))/2 + 1
	if sep != nil && sep.IsString() && sep.String() != "" {
		pieces = int64(strings.Count(s, sep.String())) + 1
	}
	return int64(len(s)) + 64*pieces
}

// numbersIn sums the decimal numbers written in s (field widths of a format
// string), saturating.
func numbersIn(s string) int64 {
	var sum, cur int64
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			cur = min(cur*10+int64(s[i]-'0'), 1<<40)
			continue
		}
		sum = min(sum+cur, 1<<40)
		cur = 0
	}
	return sum
}

// abs64 is |x|, math.MaxInt64 for math.MinInt64 (whose negation wraps).
func abs64(x int64) int64 {
	if x < 0 {
		return max(-x, -(x + 1))
	}
	return x
}

// addSat is a + b for a, b ≥ 0, saturating: a template's numbers are its
// own, and a sum that wrapped negative would pass every bound.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// The filter set the guards wrap: gonja's, with tojson as json.dumps.
func baseFilters() *exec.FilterSet {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	_ = filters.Replace("tojson", filterToJSON)
	return filters
}
