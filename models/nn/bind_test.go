package nn

import (
	"errors"
	"strings"
	"testing"

	"chat/models/weights"
)

// mapSource is a Source over float32 tensors held in a map.
type mapSource map[string]struct {
	shape []int
	data  []float32
}

func (s mapSource) Shape(name string) ([]int, bool) {
	t, ok := s[name]
	return t.shape, ok
}
func (s mapSource) Linear(name string) (weights.Linear, error) {
	t := s[name]
	return weights.NewF32(t.data, t.shape[0], t.shape[1]), nil
}
func (s mapSource) Floats(name string) ([]float32, error) { return s[name].data, nil }

func (s mapSource) add(name string, shape ...int) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	s[name] = struct {
		shape []int
		data  []float32
	}{shape, make([]float32, n)}
}

type testBlock struct {
	Norm []float32      `pt:"norm.weight" shape:"dim"`
	W    weights.Linear `pt:"w.weight" shape:"2*dim+1,dim"`
	B    []float32      `pt:"w.bias,optional" shape:"2*dim+1"`
	G    weights.Linear `pt:"gate.weight,if=gated" shape:"dim,dim"`
	Var  variant        `pt:"var"`
}

type variant interface{ name() string }

type varA struct {
	X []float32 `pt:"x" shape:"dim"`
}

func (*varA) name() string { return "a" }

type testArch struct {
	Embed  weights.Linear `pt:"embed,keep,embed" shape:"vocab,dim"`
	Blocks []testBlock    `pt:"blk.%d"`
	Out    weights.Linear `pt:"out" shape:"vocab,dim"`
}

func (*testArch) Forward(*Pass) {}

func testSource(gated bool) mapSource {
	s := mapSource{}
	s.add("embed", 10, 4)
	s.add("out", 10, 4)
	for _, b := range []string{"blk.0.", "blk.1."} {
		s.add(b+"norm.weight", 4)
		s.add(b+"w.weight", 9, 4)
		s.add(b+"var.x", 4)
		if gated {
			s.add(b+"gate.weight", 4, 4)
		}
	}
	s.add("blk.1.w.bias", 9)
	return s
}

func newTestArch() *testArch {
	a := &testArch{Blocks: make([]testBlock, 2)}
	for i := range a.Blocks {
		a.Blocks[i].Var = &varA{}
	}
	return a
}

// TestBind: tags name the tensors under their prefixes, shapes are checked
// against the dims, optional and if= tensors are taken or skipped, and a
// variant put in an interface field is bound like its struct.
func TestBind(t *testing.T) {
	dims := map[string]int{"dim": 4, "vocab": 10, "gated": 1}
	a := newTestArch()
	if err := Bind(a, "pt", testSource(true), dims); err != nil {
		t.Fatal(err)
	}
	b0, b1 := a.Blocks[0], a.Blocks[1]
	if b0.W.Rows() != 9 || b0.B != nil || b1.B == nil || b0.G == nil || b0.Var.(*varA).X == nil || a.Out == nil {
		t.Fatalf("bound %+v %+v", b0, b1)
	}
	dims["gated"] = 0
	a = newTestArch()
	if err := Bind(a, "pt", testSource(false), dims); err != nil || a.Blocks[0].G != nil {
		t.Fatalf("ungated: %v, gate %v", err, a.Blocks[0].G)
	}

	dims["gated"] = 1
	var miss *MissingError
	if err := Bind(newTestArch(), "pt", testSource(false), dims); !errors.As(err, &miss) || miss.Name != "blk.0.gate.weight" {
		t.Fatalf("missing gate: %v", err)
	}
	bad := testSource(true)
	bad.add("blk.1.w.weight", 8, 4)
	var shape *ShapeError
	if err := Bind(newTestArch(), "pt", bad, dims); !errors.As(err, &shape) || shape.Why != "dim=4" || !strings.Contains(err.Error(), "[8 4]") {
		t.Fatalf("bad shape: %v", err)
	}
}

// TestNames lists what Bind reads, if= tensors only when their dim is set.
func TestNames(t *testing.T) {
	got := strings.Join(Names(newTestArch(), "pt", map[string]int{"gated": 0}), " ")
	want := "embed blk.0.norm.weight blk.0.w.weight blk.0.w.bias blk.0.var.x blk.1.norm.weight blk.1.w.weight blk.1.w.bias blk.1.var.x out"
	if got != want {
		t.Fatalf("names %s\nwant  %s", got, want)
	}
}

// TestConvertAndWeightBytes: Convert re-encodes every matrix but those
// tagged keep, copies the structs (the original is unchanged) and keeps
// the variant's type; WeightBytes counts a kept embedding as one row and a
// matrix in two fields once.
func TestConvertAndWeightBytes(t *testing.T) {
	dims := map[string]int{"dim": 4, "vocab": 10, "gated": 0}
	a := newTestArch()
	if err := Bind(a, "pt", testSource(false), dims); err != nil {
		t.Fatal(err)
	}
	a.Out = a.Embed // tied
	// embed row 16 + blocks 2×(norm 16 + w 144 + x 16) + bias 36; out = embed: 160.
	if got, want := WeightBytes(a), int64(16+2*(16+144+16)+36+160); got != want {
		t.Fatalf("WeightBytes %d, want %d", got, want)
	}
	c, err := ConvertArch(a, func(l weights.Linear) (weights.Linear, error) { return weights.Convert(l, "int8") })
	if err != nil {
		t.Fatal(err)
	}
	ca := c.(*testArch)
	if ca.Embed != a.Embed || ca.Blocks[0].W.Format() != "int8" || a.Blocks[0].W.Format() != "f32" || ca.Out.Format() != "int8" {
		t.Fatalf("converted %s/%s/%s, original %s", ca.Embed.Format(), ca.Blocks[0].W.Format(), ca.Out.Format(), a.Blocks[0].W.Format())
	}
	if _, ok := ca.Blocks[1].Var.(*varA); !ok || ca.Blocks[1].Var == a.Blocks[1].Var {
		t.Fatal("the variant was not copied as its own type")
	}
	if n := len(Linears(a)); n != 3 { // two blocks' W and the output
		t.Fatalf("Linears: %d", n)
	}
}

// q8Source is a mapSource whose matrices are Q8_0 (a format that stacks).
type q8Source struct{ mapSource }

func (s q8Source) Linear(name string) (weights.Linear, error) {
	t := s.mapSource[name]
	for i := range t.data {
		t.data[i] = float32(i%13) - 6
	}
	return weights.FromFloat("q8_0", t.data, t.shape[0], t.shape[1])
}

type fuseArch struct {
	A weights.Linear `pt:"a" fuse:"ab" shape:"ra,32"`
	X weights.Linear `pt:"x" shape:"16,32"`
	B weights.Linear `pt:"b" fuse:"ab" shape:"16,32"`
	C weights.Linear `pt:"c,if=c" fuse:"ab" shape:"16,32"`
}

func (*fuseArch) Forward(*Pass) {}

// TestBindFuse: the fields of a fuse group are bound as parts of one matrix
// (weights.Whole), in field order, unless the format cannot split at their
// rows (then each is bound alone), and a group's missing tensor is still
// reported as missing.
func TestBindFuse(t *testing.T) {
	src := func(ra int, c bool) q8Source {
		s := mapSource{}
		s.add("a", ra, 32)
		s.add("x", 16, 32)
		s.add("b", 16, 32)
		if c {
			s.add("c", 16, 32)
		}
		return q8Source{s}
	}
	for _, tc := range []struct {
		ra    int
		c     bool
		fused bool
	}{{32, true, true}, {32, false, true}, {24, true, false}} {
		var a fuseArch
		dims := map[string]int{"ra": tc.ra, "c": 0}
		if tc.c {
			dims["c"] = 1
		}
		if err := Bind(&a, "pt", src(tc.ra, tc.c), dims); err != nil {
			t.Fatal(err)
		}
		parts := []weights.Linear{a.A, a.B}
		if tc.c {
			parts = append(parts, a.C)
		}
		if got := weights.Whole(parts...) != nil; got != tc.fused || a.A.Rows() != tc.ra || a.B.Rows() != 16 || a.X.Rows() != 16 {
			t.Errorf("A of %d rows, C %v: fused %v, want %v", tc.ra, tc.c, got, tc.fused)
		}
		if weights.Whole(a.A, a.X) != nil {
			t.Error("a matrix outside the group fused")
		}
	}
	var miss *MissingError
	if err := Bind(&fuseArch{}, "pt", src(32, false), map[string]int{"ra": 32, "c": 1}); !errors.As(err, &miss) || miss.Name != "c" {
		t.Fatalf("missing c: %v", err)
	}
}
