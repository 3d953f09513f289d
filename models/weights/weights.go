// Package weights holds weight matrices in every storage format the models
// use, behind one interface, Linear. Each format lives in its own file with
// the kernels that multiply it:
//
//	f32.go    float32 (a view of the file where it can be)
//	f16.go    IEEE half, widened in registers; activations rounded to f16 (ggml)
//	bf16.go   bfloat16, widened in registers; activations rounded to bf16 (ggml)
//	il.go     32-value integer blocks interleaved by 16 rows, with ggml's Q8_0 activations:
//	q8_0.go   GGUF Q8_0
//	q4_0.go   GGUF Q4_0
//	q5_0.go   GGUF Q5_0, unpacked to int8 values
//	iq4_nl.go GGUF IQ4_NL, its nibbles kept, the levels looked up in the kernels
//	q4_1.go   GGUF Q4_1 and Q5_1 (a min per block)
//	q4_k.go   GGUF Q4_K super-blocks, with ggml's Q8_K activations (also Q5_K, Q6_K, Q2_K, Q3_K)
//	q5_k.go   GGUF Q5_K
//	q6_k.go   GGUF Q6_K
//	q2_k.go   GGUF Q2_K
//	q3_k.go   GGUF Q3_K
//	iq4_xs.go GGUF IQ4_XS super-blocks, with Q8_K activations
//	int8.go   the course's int8 rows (quantize_int8), and int8-a8
//	int4.go   int4 groups of 32, 64 or 128 (and -a8: int8 activations)
//	nf4.go    QLoRA's NormalFloat4 in groups
//	gptq.go   int4 groups by GPTQ, calibrated on a text's activations
//	awq.go    int4 groups by AWQ, calibrated on a text's activations
//	fp8.go    fp8 E4M3 and E5M2 rows
//	lora.go   any of them plus low-rank adapter updates, not merged
//
// Any format can be made from float32 weights (FromFloat, Convert), so any
// model runs in any format; GPTQ and AWQ also need the activations each
// matrix multiplies on a calibration text (FromCalib, ConvertCalib). A product takes its activations the way the
// format's kernel does — rounded to f16, quantised to Q8_0 or Q8_K blocks, or
// as float32 — in a Scratch that the caller owns; nothing allocates once the
// scratch has grown to the largest product.
package weights

import (
	"fmt"
	"sort"
	"strings"

	"chat/models/gguf"
	"chat/models/kernels"
)

// Linear is a [Rows][Cols] row-major weight matrix in one storage format.
// It is immutable and safe for concurrent products (each with its own
// Scratch).
type Linear interface {
	Rows() int
	Cols() int
	// Format is the name FromFloat takes: "f32", "q8_0", "int8", ...
	Format() string
	// Bytes is the storage one full product reads.
	Bytes() int64
	// Mul computes out[t*Rows()+r] = W[r]·x[t*Cols():(t+1)*Cols()] for
	// t < n: out is [n][Rows], x is [n][Cols]. For every format the n rows
	// give the bits n products of one row give (with s.Prefill, the bits
	// of that row in any prefill), so a batch computes what its sequences
	// compute alone.
	Mul(out, x []float32, n int, s *Scratch)
	// Row writes row r, dequantised, into dst[:Cols()].
	Row(dst []float32, r int)
	// Slice is rows [r0, r1) as a matrix sharing the storage (a fused
	// projection split in its parts).
	Slice(r0, r1 int) Linear
}

// format is one entry of the registry: how to make the format from float32
// rows, or, for a calibrated format, from float32 rows and the activations
// the matrix multiplies (x [n][cols]); and the arithmetic its products run
// on (the zero value: float32 FMAs).
type format struct {
	fromFloat func(w []float32, rows, cols int) (Linear, error)
	fromCalib func(w []float32, rows, cols int, x []float32, n int) (Linear, error)
	arith     kernels.Arith
}

// formats is filled by each format's file.
var formats = map[string]format{}

func register(name string, f format) { formats[name] = f }

// Formats lists the format names FromFloat accepts, sorted.
func Formats() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ArithOf is the arithmetic format name's products run on, which sets their
// peak rate (models/plan): int8 dot products for the formats that quantise
// the activations to int8, float32 FMAs for the others.
func ArithOf(name string) kernels.Arith { return formats[name].arith }

// CheckFormat returns an error naming the accepted formats when name is not
// one of them.
func CheckFormat(name string) error {
	if _, ok := formats[name]; ok {
		return nil
	}
	return fmt.Errorf("weights: unknown format %q (want %s)", name, strings.Join(Formats(), ", "))
}

// FromFloat encodes the row-major [rows][cols] matrix w in format name; a
// calibrated format needs FromCalib.
func FromFloat(name string, w []float32, rows, cols int) (Linear, error) {
	f, ok := formats[name]
	if !ok {
		return nil, CheckFormat(name)
	}
	if rows <= 0 || cols <= 0 || len(w) != rows*cols {
		return nil, fmt.Errorf("weights: %s: %d values for shape [%d][%d]", name, len(w), rows, cols)
	}
	if f.fromFloat == nil {
		return nil, fmt.Errorf("weights: %s is calibrated on the activations of a text (give one with --calib FILE)", name)
	}
	return f.fromFloat(w, rows, cols)
}

// Calibrated reports whether format name learns from the activations its
// matrices multiply (GPTQ, AWQ), so FromCalib makes it.
func Calibrated(name string) bool { return formats[name].fromCalib != nil }

// FromCalib is FromFloat for any format, with the calibration activations
// x ([n][cols], the inputs the matrix sees on a text) that a calibrated
// format needs; other formats ignore them.
func FromCalib(name string, w []float32, rows, cols int, x []float32, n int) (Linear, error) {
	f, ok := formats[name]
	if !ok || f.fromCalib == nil {
		return FromFloat(name, w, rows, cols)
	}
	if rows <= 0 || cols <= 0 || len(w) != rows*cols || n < 1 || len(x) < n*cols {
		return nil, fmt.Errorf("weights: %s: %d values for shape [%d][%d] with %d calibration values for %d rows", name, len(w), rows, cols, len(x), n)
	}
	return f.fromCalib(w, rows, cols, x, n)
}

// ConvertCalib is Convert with calibration activations (FromCalib).
func ConvertCalib(l Linear, name string, x []float32, n int) (Linear, error) {
	if l.Format() == name {
		return l, nil
	}
	return FromCalib(name, Dequantize(l), l.Rows(), l.Cols(), x, n)
}

// ShapeError is a block format asked to hold rows that are not a whole
// number of its blocks.
type ShapeError struct {
	Format      string
	Block, Cols int
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("weights: %s needs rows of a multiple of %d values, not %d", e.Format, e.Block, e.Cols)
}

// Convert re-encodes l in format name, from its dequantised rows (l itself
// when it already is in that format).
func Convert(l Linear, name string) (Linear, error) {
	if l.Format() == name {
		return l, nil
	}
	return FromFloat(name, Dequantize(l), l.Rows(), l.Cols())
}

// Dequantize returns the whole matrix as float32 rows.
func Dequantize(l Linear) []float32 {
	r, c := l.Rows(), l.Cols()
	out := make([]float32, r*c)
	for i := 0; i < r; i++ {
		l.Row(out[i*c:(i+1)*c], i)
	}
	return out
}

// FromGGUF takes a GGUF tensor's raw bytes (ggml dims [cols, rows]) as
// stored, the kernels multiplying every type Dequantize reads (copied into
// huge-page memory, view.go). raw must hold exactly rows·cols elements of t.
func FromGGUF(t gguf.Type, raw []byte, rows, cols int) (Linear, error) {
	if err := checkGGUF(t, raw, rows, cols); err != nil {
		return nil, err
	}
	switch t {
	case gguf.TypeF32:
		return &F32{rows: rows, cols: cols, w: f32View(raw)}, nil
	case gguf.TypeF16:
		return &F16{newHalves(u16s(raw), rows, cols)}, nil
	case gguf.TypeBF16:
		return &BF16{newHalves(u16s(raw), rows, cols)}, nil
	case gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeIQ4_NL, gguf.TypeQ4_1, gguf.TypeQ5_1:
		return newInterleaved(t, [][]byte{raw}, []int{rows}, cols), nil
	case gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeIQ4_XS, gguf.TypeQ2_K, gguf.TypeQ3_K:
		return newBlocks(blockKinds[t], [][]byte{raw}, []int{rows}, cols), nil
	}
	return nil, fmt.Errorf("weights: tensor type %s is not supported", t)
}

// checkGGUF reports whether raw holds a [rows][cols] tensor of type t.
func checkGGUF(t gguf.Type, raw []byte, rows, cols int) error {
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("weights: bad shape [%d][%d]", rows, cols)
	}
	if bs := t.BlockSize(); bs == 0 || cols%bs != 0 {
		return fmt.Errorf("weights: a %s row of %d values is not a whole number of blocks", t, cols)
	}
	if want := int64(rows) * int64(cols/t.BlockSize()) * int64(t.BlockBytes()); int64(len(raw)) != want {
		return fmt.Errorf("weights: %s [%d][%d] needs %d bytes, got %d", t, rows, cols, want, len(raw))
	}
	return nil
}

func sum(ns []int) int {
	s := 0
	for _, n := range ns {
		s += n
	}
	return s
}

// Scratch is one caller's working memory for products: the activations as
// a format's kernel takes them, and dequantised weights. It grows to the
// largest product it has seen and is not safe for concurrent use.
type Scratch struct {
	// Prefill marks the rows of the next products as a prefill's: float
	// formats then take kernels.MatMulPrefill, whose sums round in another
	// order than a decode's but give each row the same bits in any batch.
	// The integer formats compute the same either way.
	Prefill bool
	// Reuse tells the kernels whether the model's weights stay in the
	// last-level cache between steps (kernels.ReuseFor); it changes how
	// they are fetched, not the bits.
	Reuse kernels.Reuse

	il   kernels.ILAct // activations quantised for an interleaved product
	q    []int8        // quantised activations [n][cols]
	d    []float32     // their block scales
	sums []int16       // Q8_K sums per 16 values
	f    []float32     // rounded activations, or dequantised weights
	xs   []float32     // per-token scales (int8-a8)
	lo   []float32     // a LoRA update's low-rank activations and product (lora.go)
}

func (s *Scratch) int8s(n int) []int8 {
	if len(s.q) < n {
		s.q = make([]int8, n)
	}
	return s.q[:n]
}

func (s *Scratch) scales(n int) []float32 {
	if len(s.d) < n {
		s.d = make([]float32, n)
	}
	return s.d[:n]
}

func (s *Scratch) int16s(n int) []int16 {
	if len(s.sums) < n {
		s.sums = make([]int16, n)
	}
	return s.sums[:n]
}

func (s *Scratch) floats(n int) []float32 {
	if len(s.f) < n {
		s.f = make([]float32, n)
	}
	return s.f[:n]
}

func (s *Scratch) tokenScales(n int) []float32 {
	if len(s.xs) < n {
		s.xs = make([]float32, n)
	}
	return s.xs[:n]
}

// checkMul panics unless a product's operands fit: the kernels' assembly
// does not check bounds.
func checkMul(l Linear, out, x []float32, n int) {
	if n < 1 || len(out) < n*l.Rows() || len(x) < n*l.Cols() {
		panic(fmt.Sprintf("weights: %s [%d][%d] product of %d rows with len(out)=%d len(x)=%d",
			l.Format(), l.Rows(), l.Cols(), n, len(out), len(x)))
	}
}

func checkSlice(l Linear, r0, r1 int) {
	if r0 < 0 || r1 > l.Rows() || r0 >= r1 {
		panic(fmt.Sprintf("weights: rows [%d, %d) of a %d-row matrix", r0, r1, l.Rows()))
	}
}

// ConcatRows stacks float32 matrices with the same number of columns into
// one new matrix (the course's per-head projections become one).
func ConcatRows(parts ...Linear) (Linear, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("weights: nothing to concatenate")
	}
	cols, rows := parts[0].Cols(), 0
	for _, p := range parts {
		if _, ok := p.(*F32); !ok || p.Cols() != cols {
			return nil, fmt.Errorf("weights: ConcatRows of %s [%d][%d] with float32 [..][%d]", p.Format(), p.Rows(), p.Cols(), cols)
		}
		rows += p.Rows()
	}
	w := make([]float32, 0, rows*cols)
	for _, p := range parts {
		w = append(w, p.(*F32).w...)
	}
	return NewF32(w, rows, cols), nil
}
