package kvcache

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

func filledSeq(t *testing.T, p *Pool, n int) (*Seq, []int) {
	t.Helper()
	s := p.NewSeq(64)
	if err := s.Append(n); err != nil {
		t.Fatal(err)
	}
	toks := make([]int, n)
	for pos := range n {
		toks[pos] = 100 + pos
		for l := 0; l < p.Layout().Layers; l++ {
			k, v := row(s, l, pos)
			for j := range k {
				k[j] = float32(pos*10 + l + j)
			}
			for j := range v {
				v[j] = -float32(pos*10 + l + j)
			}
		}
	}
	return s, toks
}

// TestExportImportRoundTrip: the imported sequence reads back every row and
// token; the pool is left with no extra reference on error paths.
func TestExportImportRoundTrip(t *testing.T) {
	p, err := NewPool(Layout{Layers: 2, KDim: 4, VDim: 3}, 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	s, toks := filledSeq(t, p, 10)
	var buf bytes.Buffer
	if err := s.Export(&buf, "model-a", toks); err != nil {
		t.Fatal(err)
	}
	got, gt, err := p.Import(bytes.NewReader(buf.Bytes()), "model-a", 64)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gt, toks) || got.Len() != 10 {
		t.Fatalf("tokens %v len %d", gt, got.Len())
	}
	for pos := range 10 {
		for l := range 2 {
			k1, v1 := row(s, l, pos)
			k2, v2 := row(got, l, pos)
			if !slices.Equal(k1, k2) || !slices.Equal(v1, v2) {
				t.Fatalf("pos %d layer %d differs", pos, l)
			}
		}
	}
	got.Free()
	s.Free()
	if p.Used() != 0 {
		t.Fatalf("used %d after freeing", p.Used())
	}
}

// TestImportRefusesBadFiles: every truncation, every flipped byte, another
// model's identity, another layout and trailing bytes are refused with an
// error (never a panic), and leave nothing allocated.
func TestImportRefusesBadFiles(t *testing.T) {
	p, _ := NewPool(Layout{Layers: 2, KDim: 4, VDim: 3}, 4, 16)
	s, toks := filledSeq(t, p, 7)
	var buf bytes.Buffer
	if err := s.Export(&buf, "model-a", toks); err != nil {
		t.Fatal(err)
	}
	s.Free()
	good := buf.Bytes()
	try := func(what string, data []byte, id string, want string) {
		t.Helper()
		seq, _, err := p.Import(bytes.NewReader(data), id, 64)
		if err == nil {
			seq.Free()
			t.Fatalf("%s: accepted", what)
		}
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %q, want ErrFormat containing %q", what, err, want)
		}
		if p.Used() != 0 {
			t.Fatalf("%s: %d blocks left in use", what, p.Used())
		}
	}
	for n := 0; n < len(good); n++ {
		try("truncated", good[:n], "model-a", "")
	}
	for i := 0; i < len(good); i++ {
		bad := slices.Clone(good)
		bad[i] ^= 0x40
		try("flipped", bad, "model-a", "")
	}
	try("foreign", good, "model-b", `written by model "model-a"; this is "model-b"`)
	try("trailing", append(slices.Clone(good), 0), "model-a", "after the trailer")

	other, _ := NewPool(Layout{Layers: 3, KDim: 4, VDim: 3}, 4, 16)
	if _, _, err := other.Import(bytes.NewReader(good), "model-a", 64); err == nil || !strings.Contains(err.Error(), "layout") {
		t.Fatalf("other layout: %v", err)
	}
}

// TestAppendFullAndCoW: a full pool refuses a write without changing the
// sequence; a write into a shared partial block copies it.
func TestAppendFullAndCoW(t *testing.T) {
	p, _ := NewPool(Layout{Layers: 1, KDim: 1, VDim: 1}, 2, 3)
	a := p.NewSeq(100)
	if err := a.Append(3); err != nil { // blocks 0,1 (1 partial)
		t.Fatal(err)
	}
	k, _ := row(a, 0, 2)
	k[0] = 7
	b := a.Fork()
	if err := b.Append(1); err != nil { // copies the partial block: 3 blocks used
		t.Fatal(err)
	}
	kb, _ := row(b, 0, 3)
	kb[0] = 9
	if ka, _ := row(a, 0, 2); ka[0] != 7 || p.Copies() != 1 || p.Used() != 3 {
		t.Fatalf("a sees %v, copies %d, used %d", ka[0], p.Copies(), p.Used())
	}
	if kb, _ := row(b, 0, 2); kb[0] != 7 {
		t.Fatalf("b lost the copied row: %v", kb[0])
	}
	if err := a.Append(2); !errors.Is(err, ErrFull) || a.Len() != 3 || p.Used() != 3 {
		t.Fatalf("append on a full pool: %v, len %d, used %d", err, a.Len(), p.Used())
	}
	a.Free()
	b.Free()
	if p.Used() != 0 || p.Free() != 3 {
		t.Fatalf("leak: used %d free %d", p.Used(), p.Free())
	}
	if _, err := NewPool(Layout{}, 16, 1); err == nil {
		t.Fatal("empty layout accepted")
	}
}

// FuzzImport: any bytes are either a file Import accepts (and then its
// sequence frees cleanly) or an error; never a panic or a leak.
func FuzzImport(f *testing.F) {
	p, _ := NewPool(Layout{Layers: 2, KDim: 4, VDim: 3}, 4, 16)
	s := p.NewSeq(64)
	s.Append(6)
	var buf bytes.Buffer
	s.Export(&buf, "m", []int{1, 2, 3, 4, 5, 6})
	s.Free()
	f.Add(buf.Bytes())
	f.Add([]byte(fileMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		seq, toks, err := p.Import(bytes.NewReader(data), "m", 64)
		if err == nil {
			if seq.Len() != len(toks) {
				t.Fatalf("len %d, %d tokens", seq.Len(), len(toks))
			}
			seq.Free()
		}
		if p.Used() != 0 {
			t.Fatalf("%d blocks leaked", p.Used())
		}
	})
}

// row is a float32 pool's key and value row of position pos in layer l, as
// views of the pool (writes go to the cache).
func row(s *Seq, l, pos int) (k, v []float32) {
	bs, kd, vd := s.BlockSize(), s.p.lay.KDim, s.p.lay.VDim
	r := pos % bs
	k, _ = s.Keys(l, pos/bs, pos/bs+1, nil)
	v, _ = s.Values(l, pos/bs, pos/bs+1, nil)
	return k[r*kd : (r+1)*kd], v[r*vd : (r+1)*vd]
}

// /kv load of another model's file printed both identities whole, two
// 250-byte lines that shared most of their text: the message starts at
// the field where they part.
func TestFromDiff(t *testing.T) {
	a := "chat-kv model=Llama 3.2 1B arch=llama quant=q4_k_m vocab=128256"
	b := "chat-kv model=Llama 3.2 1B arch=llama quant=q8_0 vocab=128256"
	if x, y := fromDiff(a, b); x != "quant=q4_k_m vocab=128256" || y != "quant=q8_0 vocab=128256" {
		t.Errorf("fromDiff: %q, %q", x, y)
	}
	if x, y := fromDiff("model-a", "model-b"); x != "model-a" || y != "model-b" {
		t.Errorf("fromDiff: %q, %q", x, y)
	}
}
