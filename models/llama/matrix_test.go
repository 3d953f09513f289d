package llama

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"chat/models/gguf"
)

// TestQ8MatrixProduct checks the Q8_0 product against float64 on the
// dequantised weights: the only error left is the activations' rounding.
func TestQ8MatrixProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	rows, cols := 7, 96
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	raw, err := gguf.QuantizeQ8_0(w)
	if err != nil {
		t.Fatal(err)
	}
	m := &matrix{rows: rows, cols: cols, q: make([]int8, rows*cols), d: make([]float32, rows*cols/32)}
	unpackQ8_0(raw, m.q, m.d)
	deq := make([]float32, rows*cols)
	gguf.Dequantize(gguf.TypeQ8_0, raw, deq)
	x := make([]float32, 2*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	out := make([]float32, 2*rows)
	a2 := newAct(2, cols)
	m.mul(out, x, 2, &a2)
	// Blocks of 2 rows give the same bits as whole-matrix products.
	defer func(b int) { blockElems = b }(blockElems)
	blockElems = 2 * cols
	blocked := make([]float32, 2*rows)
	m.mul(blocked, x, 2, &a2)
	for i := 0; i < 2; i++ {
		one := make([]float32, rows)
		a1 := newAct(1, cols)
		m.mul(one, x[i*cols:], 1, &a1)
		for j := range one {
			if one[j] != out[i*rows+j] || one[j] != blocked[i*rows+j] {
				t.Fatalf("token %d row %d: %v alone, %v batched, %v in blocks", i, j, one[j], out[i*rows+j], blocked[i*rows+j])
			}
		}
	}
	row := make([]float32, cols)
	for i := 0; i < 2; i++ {
		for j := 0; j < rows; j++ {
			var want, norm float64
			for k := 0; k < cols; k++ {
				want += float64(deq[j*cols+k]) * float64(x[i*cols+k])
				norm += math.Abs(float64(deq[j*cols+k]))
			}
			// Each activation is off by at most half a step, max|x|/254.
			if d := math.Abs(float64(out[i*rows+j]) - want); d > norm*4/254 {
				t.Errorf("out[%d][%d] = %v, want %v", i, j, out[i*rows+j], want)
			}
		}
	}
	m.row(row, 3)
	for k := range row {
		if row[k] != deq[3*cols+k] {
			t.Fatalf("row[%d] = %v, want %v", k, row[k], deq[3*cols+k])
		}
	}
}

func TestQuantizeAct(t *testing.T) {
	x := make([]float32, 64)
	x[0], x[1], x[2], x[3] = 127, 2.5, 3.5, -0.5 // scale 1: ties go to even
	q, d := make([]int8, 64), make([]float32, 2)
	quantizeAct(q, d, x)
	if q[0] != 127 || q[1] != 2 || q[2] != 4 || q[3] != 0 || d[0] != 1 {
		t.Errorf("q = %v, d = %v", q[:4], d)
	}
	if d[1] != 0 || q[40] != 0 {
		t.Errorf("zero block: d %v q %v", d[1], q[40])
	}
}

// unpackQ8_0 splits GGUF Q8_0 blocks (f16 scale, 32 int8) into values and
// float32 scales. The int8 kernels need values in [-127, 127]; ggml's
// quantizer never writes -128, and a file that does is clamped.
func unpackQ8_0(raw []byte, q []int8, d []float32) {
	for b := range d {
		blk := raw[34*b : 34*b+34]
		d[b] = gguf.F16ToF32(binary.LittleEndian.Uint16(blk))
		for j, v := range blk[2:] {
			q[32*b+j] = max(int8(v), -127)
		}
	}
}

// TestQ8RawProduct: Q8_0 weights are multiplied in GGUF's own blocks (a view
// of the file); one token, a batch and the unpacked int8 path agree within
// float rounding of the same integer sums.
func TestQ8RawProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	rows, cols := 9, 128
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	raw, err := gguf.QuantizeQ8_0(w)
	if err != nil {
		t.Fatal(err)
	}
	rm := &matrix{rows: rows, cols: cols, raw: raw, typ: gguf.TypeQ8_0}
	um := &matrix{rows: rows, cols: cols, q: make([]int8, rows*cols), d: make([]float32, rows*cols/32)}
	unpackQ8_0(raw, um.q, um.d)
	x := make([]float32, 3*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	a := newAct(3, cols)
	batched, unpacked := make([]float32, 3*rows), make([]float32, 3*rows)
	rm.mul(batched, x, 3, &a)
	um.mul(unpacked, x, 3, &a)
	for i := 0; i < 3; i++ {
		one := make([]float32, rows)
		a1 := newAct(1, cols)
		rm.mul(one, x[i*cols:], 1, &a1)
		for j := range one {
			b, u := batched[i*rows+j], unpacked[i*rows+j]
			if one[j] != b || math.Abs(float64(b-u)) > 1e-4*(1+math.Abs(float64(u))) {
				t.Fatalf("token %d row %d: %v alone, %v batched, %v unpacked", i, j, one[j], b, u)
			}
		}
	}
}
