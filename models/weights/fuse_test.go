package weights

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"chat/models/gguf"
)

// stackFormats are the formats Stack takes (on any host: the K-quants are
// interleaved only on AVX-512 VNNI ones, and stack either way).
var stackFormats = []string{"q8_0", "q4_0", "q5_0", "iq4_nl", "q4_1", "q5_1",
	"int4-g32-a8", "int4-g64-a8", "int4-g128-a8", "q4_k", "q5_k", "q6_k", "q2_k", "q3_k", "iq4_xs"}

// TestFuse checks that a fused matrix gives each part's rows the bits the
// part gives alone, for one token and batches, decode and prefill; that
// its parts are views of the same rows which Whole recognises only in
// order and complete; and which formats and row counts stay unfused.
func TestFuse(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const cols = 512
	for _, f := range Formats() {
		// The last part may end inside a row group; the others may not.
		for _, rows := range [][]int{{48, 16, 32}, {32, 16, 20}, {64, 64}} {
			parts := make([]Linear, len(rows))
			for i, n := range rows {
				m, err := FromFloat(f, randMatrix(r, n, cols), n, cols)
				if err != nil {
					break // a calibrated format: not made here
				}
				parts[i] = m
			}
			if parts[len(parts)-1] == nil {
				continue
			}
			fused := fuse(parts...)
			if !contains(stackFormats, f) {
				if fused != nil {
					t.Errorf("%s: fused, though its format does not stack", f)
				}
				continue
			}
			if fused == nil {
				t.Fatalf("%s %v: not fused", f, rows)
			}
			checkFused(t, f, parts, fused, r)
		}
	}
}

func checkFused(t *testing.T, f string, parts, fused []Linear, r *rand.Rand) {
	t.Helper()
	whole := Whole(fused...)
	if whole == nil {
		t.Fatalf("%s: Whole does not recognise the parts", f)
	}
	if len(fused) > 1 {
		if Whole(fused[1:]...) != nil || Whole(fused[:len(fused)-1]...) != nil {
			t.Errorf("%s: Whole of some of the parts", f)
		}
		swapped := append([]Linear{fused[1], fused[0]}, fused[2:]...)
		if Whole(swapped...) != nil {
			t.Errorf("%s: Whole of the parts out of order", f)
		}
		if Whole(append([]Linear{parts[0]}, fused[1:]...)...) != nil {
			t.Errorf("%s: Whole with a part replaced", f)
		}
	}
	cols, total := whole.Cols(), whole.Rows()
	var bytes int64
	for i, p := range parts {
		if fused[i].Rows() != p.Rows() || fused[i].Cols() != cols || fused[i].Format() != f {
			t.Fatalf("%s: part %d is %s [%d][%d]", f, i, fused[i].Format(), fused[i].Rows(), fused[i].Cols())
		}
		a, b := make([]float32, cols), make([]float32, cols)
		for row := 0; row < p.Rows(); row++ {
			p.Row(a, row)
			fused[i].Row(b, row)
			for j := range a {
				if a[j] != b[j] {
					t.Fatalf("%s: part %d row %d value %d: %v fused, %v alone", f, i, row, j, b[j], a[j])
				}
			}
		}
		bytes += fused[i].Bytes()
	}
	if bytes != whole.Bytes() {
		t.Errorf("%s: the parts' bytes add up to %d, the whole's are %d", f, bytes, whole.Bytes())
	}
	for _, n := range []int{1, 3, 8} {
		for _, prefill := range []bool{false, true} {
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			s := Scratch{Prefill: prefill}
			all := make([]float32, n*total)
			whole.Mul(all, x, n, &s)
			r0 := 0
			for i, p := range parts {
				rows := p.Rows()
				alone, view := make([]float32, n*rows), make([]float32, n*rows)
				p.Mul(alone, x, n, &s)
				fused[i].Mul(view, x, n, &s)
				for tok := 0; tok < n; tok++ {
					for j := 0; j < rows; j++ {
						a, v, w := alone[tok*rows+j], view[tok*rows+j], all[tok*total+r0+j]
						if a != w || a != v {
							t.Fatalf("%s: %d tokens (prefill %v): part %d token %d row %d: %v alone, %v as a view, %v fused",
								f, n, prefill, i, tok, j, a, v, w)
						}
					}
				}
				r0 += rows
			}
		}
	}
}

// TestFuseRefuses checks what stays unfused: a part other than the last
// that ends inside an interleaved format's row group, parts of different
// formats or widths, and a cut of a whole that a view could not share.
func TestFuseRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const cols = 256
	mk := func(f string, rows, cols int) Linear {
		m, err := FromFloat(f, randMatrix(r, rows, cols), rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, f := range []string{"q8_0", "q4_0", "q4_k", "int4-g32-a8"} {
		ragged := []Linear{mk(f, 40, cols), mk(f, 24, cols), mk(f, 32, cols)}
		if b, ok := ragged[0].(*Blocks); ok && b.il == nil {
			continue // K-quant blocks as in the file (no AVX-512 VNNI) split at any row
		}
		if Stack(ragged...) != nil || fuse(ragged...) != nil {
			t.Errorf("%s: parts of 40, 24 and 32 rows stacked", f)
		}
		whole := mk(f, 96, cols)
		if Split(whole, 40, 56) != nil {
			t.Errorf("%s: split at row 40", f)
		}
		if Split(whole, 32, 32) != nil {
			t.Errorf("%s: split into parts that leave rows out", f)
		}
	}
	for _, f := range []string{"f32", "f16", "bf16"} {
		if Stack(mk(f, 32, cols), mk(f, 32, cols)) != nil {
			t.Errorf("%s stacked: its prefill's kernel depends on the matrix's size", f)
		}
	}
	if Stack(mk("q8_0", 32, cols), mk("q4_0", 32, cols)) != nil {
		t.Error("q8_0 and q4_0 stacked")
	}
	if Stack(mk("q8_0", 32, cols), mk("q8_0", 32, 2*cols)) != nil {
		t.Error("matrices of different widths stacked")
	}
	if Stack(mk("int8", 32, cols), mk("int8", 32, cols)) != nil {
		t.Error("int8 (not a stacking format) stacked")
	}
	// A fused part is not stacked again (its storage is the whole's).
	fused := fuse(mk("q8_0", 32, cols), mk("q8_0", 32, cols))
	if Stack(fused...) != nil {
		t.Error("fused parts stacked again")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// fuse stacks parts (Stack) and splits the result again (Split): the
// views to use in their place, or nil when they cannot be fused.
func fuse(parts ...Linear) []Linear {
	w := Stack(parts...)
	if w == nil {
		return nil
	}
	rows := make([]int, len(parts))
	for i, p := range parts {
		rows[i] = p.Rows()
	}
	return Split(w, rows...)
}

// TestStackGGUF checks that tensors stacked from their GGUF blocks give
// the rows of the concatenated tensor, that ragged or misshapen parts are
// refused, and that stacking allocates the stacked matrix only: a
// concatenated copy of the blocks, garbage after the load, stayed in the
// RSS (1B Q8_0: 1.90 GB where the unfused load took 1.79).
func TestStackGGUF(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const cols = 512
	var types []gguf.Type
	for typ := range ilPacks {
		types = append(types, typ)
	}
	for typ := range blockKinds {
		types = append(types, typ)
	}
	for _, typ := range types {
		rows := []int{48, 16, 20}
		raws := make([][]byte, len(rows))
		var all []byte
		for i, n := range rows {
			raw, err := gguf.Quantize(typ, randMatrix(r, n, cols))
			if err != nil {
				t.Fatal(err)
			}
			raws[i], all = raw, append(all, raw...)
		}
		want, err := FromGGUF(typ, all, sum(rows), cols)
		if err != nil {
			t.Fatal(err)
		}
		got, err := StackGGUF(typ, raws, rows, cols)
		if err != nil || got == nil {
			t.Fatalf("%s: StackGGUF: %v, %v", typ, got, err)
		}
		if got.Rows() != want.Rows() || got.Bytes() != want.Bytes() || got.Format() != want.Format() {
			t.Fatalf("%s: stacked %s [%d] of %d bytes, concatenated %s [%d] of %d", typ,
				got.Format(), got.Rows(), got.Bytes(), want.Format(), want.Rows(), want.Bytes())
		}
		a, b := make([]float32, cols), make([]float32, cols)
		for row := 0; row < want.Rows(); row++ {
			want.Row(a, row)
			got.Row(b, row)
			for j := range a {
				if a[j] != b[j] {
					t.Fatalf("%s: row %d value %d: %v stacked, %v concatenated", typ, row, j, b[j], a[j])
				}
			}
		}
		if _, err := StackGGUF(typ, raws, []int{48, 16, 21}, cols); err == nil {
			t.Errorf("%s: a part of the wrong size stacked", typ)
		}
		if ggufSplitsAt(typ, 20) {
			continue // K-quant blocks as in the file (no AVX-512 VNNI) split at any row
		}
		if w, err := StackGGUF(typ, [][]byte{raws[2], raws[0]}, []int{20, 48}, cols); w != nil || err != nil {
			t.Errorf("%s: a first part of 20 rows stacked (%v)", typ, err)
		}
	}

	// Two Q8_0 parts of 4096 × 2048 (17.8 MB stacked, a 1B model's gate
	// and up): a concatenated copy would make it at least twice that.
	rows := []int{4096, 4096}
	raws := make([][]byte, len(rows))
	for i, n := range rows {
		raw, err := gguf.Quantize(gguf.TypeQ8_0, make([]float32, n*2048))
		if err != nil {
			t.Fatal(err)
		}
		raws[i] = raw
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w, err := StackGGUF(gguf.TypeQ8_0, raws, rows, 2048)
	runtime.ReadMemStats(&after)
	if err != nil || w == nil {
		t.Fatalf("StackGGUF: %v, %v", w, err)
	}
	if got := int64(after.TotalAlloc - before.TotalAlloc); got >= 2*w.Bytes() {
		t.Errorf("stacking %d bytes allocated %d", w.Bytes(), got)
	}
}
