package nn

import (
	"strings"
	"testing"

	"chat/models/weights"
)

// TestTensorsAndMapLinears: every tagged tensor is listed under the name
// Bind read it from (prefixes of nested structs, slices and variants), and
// MapLinears replaces matrices by name, kept ones included, in a copy.
func TestTensorsAndMapLinears(t *testing.T) {
	dims := map[string]int{"dim": 4, "vocab": 10, "gated": 1}
	a := newTestArch()
	src := testSource(true)
	if err := Bind(a, "pt", src, dims); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ts := range Tensors(a, "pt") {
		names = append(names, ts.Name)
		if _, ok := src[ts.Name]; !ok {
			t.Errorf("listed %q, which the source does not hold", ts.Name)
		}
		if (ts.Linear == nil) == (ts.Floats == nil) {
			t.Errorf("%s: a tensor is a matrix or a vector", ts.Name)
		}
		if ts.Keep != (ts.Name == "embed") {
			t.Errorf("%s: keep %v", ts.Name, ts.Keep)
		}
	}
	want := "embed blk.0.norm.weight blk.0.w.weight blk.0.gate.weight blk.0.var.x blk.1.norm.weight blk.1.w.weight blk.1.w.bias blk.1.gate.weight blk.1.var.x out"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("names\n got %s\nwant %s", got, want)
	}

	seen := map[string]bool{}
	c, err := MapLinears(a, "pt", func(name string, l weights.Linear) (weights.Linear, error) {
		seen[name] = true
		if name == "blk.1.w.weight" || name == "embed" {
			return weights.Convert(l, "int8")
		}
		return l, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ca := c.(*testArch)
	if len(seen) != 6 || ca.Blocks[1].W.Format() != "int8" || ca.Embed.Format() != "int8" ||
		ca.Blocks[0].W != a.Blocks[0].W || a.Blocks[1].W.Format() != "f32" {
		t.Fatalf("mapped %v: %s %s", seen, ca.Blocks[1].W.Format(), ca.Embed.Format())
	}
}

// TestBlocks: the matrices of each block come as one group, in order.
func TestBlocks(t *testing.T) {
	dims := map[string]int{"dim": 4, "vocab": 10, "gated": 1}
	a := newTestArch()
	if err := Bind(a, "pt", testSource(true), dims); err != nil {
		t.Fatal(err)
	}
	g := Blocks(a)
	if len(g) != 3 || len(g[0]) != 2 || g[0][0] != a.Blocks[0].W || g[0][1] != a.Blocks[0].G ||
		g[1][0] != a.Blocks[1].W || len(g[2]) != 1 || g[2][0] != a.Out {
		t.Fatalf("groups %v", g)
	}
}
