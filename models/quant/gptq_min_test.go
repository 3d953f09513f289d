package quant

import (
	"testing"

	"chat/models/kernels"
)

// TestGPTQMin: asymmetric GPTQ's groups hold halves, its weights are
// d·q + m of its codes, and its output error on held-out tokens is below
// that of symmetric GPTQ in the same bytes (int4-g32: a float32 scale).
func TestGPTQMin(t *testing.T) {
	p := newCalibProblem(7, 64, 256, 512)
	sym, err := GPTQ(p.w, p.rows, p.cols, p.x, p.n, GPTQOptions{Group: 32})
	if err != nil {
		t.Fatal(err)
	}
	asym, err := GPTQMin(p.w, p.rows, p.cols, p.x, p.n, GPTQOptions{Group: 32})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]float32{asym.D, asym.M} {
		h := make([]float32, len(v))
		kernels.RoundF16(h, v)
		for i := range v {
			if h[i] != v[i] {
				t.Fatalf("group %d: %g is not a half", i, v[i])
			}
		}
	}
	d := asym.Dequantize()
	rb := (p.cols + 1) / 2
	for r := 0; r < p.rows; r++ {
		for c := 0; c < p.cols; c++ {
			k := r*p.cols/32 + c/32
			q := float32(asym.Packed[r*rb+c/2] >> (4 * (c & 1)) & 15)
			if want := float32(q*asym.D[k]) + asym.M[k]; d[r*p.cols+c] != want {
				t.Fatalf("w[%d][%d] = %g, want %g", r, c, d[r*p.cols+c], want)
			}
		}
	}
	eS, eA := p.relErr(sym.Dequantize(), nil), p.relErr(d, nil)
	t.Logf("output error: GPTQ %.4f, asymmetric %.4f", eS, eA)
	if !(eA < eS) {
		t.Errorf("asymmetric GPTQ error %.4f, not below symmetric %.4f", eA, eS)
	}
}
