package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Quantizers from float32 to ggml's block formats. Each one follows ggml's
// reference quantizer, quantize_row_*_ref in ggml/src/ggml-quants.c (the
// path llama-quantize takes without an importance matrix), operation by
// operation in float32, so the bytes equal what ggml writes (checked against
// ggml's own output in TestQuantizeGolden). IQ4_NL and IQ4_XS follow the
// quantize_iq4_nl and quantize_iq4_xs that llama-quantize calls instead
// (quantize_iq4.go).
//
// Two rules keep the arithmetic identical to C's:
//   - every product that is then added to is written float32(a*b), an explicit
//     rounding that forbids the compiler a fused multiply-add (Go fuses on
//     arm64, and on amd64 with GOAMD64=v3); the reference is ggml built without
//     contraction, as x86-64 builds of ggml-quants.c are;
//   - float-to-small-integer casts use cvtt, which behaves as x86-64 does.

// CanQuantize reports whether Quantize can produce t.
func CanQuantize(t Type) bool {
	switch t {
	case TypeF32, TypeF16, TypeBF16:
		return true
	}
	_, ok := blockQuantizers[t]
	return ok
}

// blockQuantizers encode one block of x into y (zeroed, BlockBytes long) and
// report false when a scale overflowed the range of its f16.
var blockQuantizers = map[Type]func(x []float32, y []byte) bool{
	TypeQ8_0:   quantQ8_0,
	TypeQ4_0:   quantQ4_0,
	TypeQ4_1:   quantQ4_1,
	TypeQ5_0:   quantQ5_0,
	TypeQ5_1:   quantQ5_1,
	TypeQ2_K:   quantQ2K,
	TypeQ3_K:   quantQ3K,
	TypeQ4_K:   quantQ4K,
	TypeQ5_K:   quantQ5K,
	TypeQ6_K:   quantQ6K,
	TypeIQ4_NL: quantIQ4NL,
	TypeIQ4_XS: quantIQ4XS,
}

// Quantize encodes x as type t: F32, F16 and BF16 element by element (as
// ggml converts them; NaN and Inf pass through), the block types as ggml's
// reference quantizers do. len(x) must be a multiple of t's block size.
//
// Block types reject NaN and Inf, which ggml's reference quantizers do not
// check (they write garbage, or trip nearest_int's assert in a debug build),
// and blocks beyond what the format can hold, which ggml writes silently:
// those whose f16 scale or min would overflow to infinity (and dequantise to
// Inf and NaN), for example values beyond about 8e6 in Q8_0 or 5e5 in Q4_0,
// or a minimum below -65504 in Q4_1 and Q5_1; and k-quant and IQ4_XS
// blocks past kMaxAbs. Every other finite input gives ggml's bytes.
func Quantize(t Type, x []float32) ([]byte, error) {
	var out []byte
	if n, err := t.RowBytes(int64(len(x))); err == nil && CanQuantize(t) {
		out = make([]byte, n)
	} // else QuantizeInto says what is wrong
	if err := QuantizeInto(t, x, out); err != nil {
		return nil, err
	}
	return out, nil
}

// QuantizeInto is Quantize writing into out, which must be exactly the size
// of x's encoding: a large tensor is encoded a piece at a time into one
// buffer.
func QuantizeInto(t Type, x []float32, out []byte) error {
	if !CanQuantize(t) {
		return fmt.Errorf("gguf: quantising to %s is not supported", t)
	}
	n, err := t.RowBytes(int64(len(x)))
	if err != nil {
		return err
	}
	if int64(len(out)) != n {
		return fmt.Errorf("gguf: %d %s elements take %d bytes, not %d", len(x), t, n, len(out))
	}
	switch t {
	case TypeF32:
		for i, v := range x {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
		return nil
	case TypeF16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(out[2*i:], F32ToF16(v))
		}
		return nil
	case TypeBF16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(out[2*i:], F32ToBF16(v))
		}
		return nil
	}
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("gguf: cannot quantise %v (element %d) to %s", v, i, t)
		}
	}
	clear(out) // the block quantizers fill in zeroed blocks
	quant := blockQuantizers[t]
	bs, bb := t.BlockSize(), t.BlockBytes()
	for i := 0; i < len(x)/bs; i++ {
		blk := x[i*bs : (i+1)*bs]
		_, amax := blockAbsMax(blk)
		if lim, ok := kMaxAbs[t]; ok && amax > lim {
			return fmt.Errorf("gguf: %s block %d: values up to %g are beyond the ±%g it can hold", t, i, amax, lim)
		}
		if !quant(blk, out[i*bb:(i+1)*bb]) {
			return fmt.Errorf("gguf: %s block %d: values up to %g overflow its f16 scales", t, i, amax)
		}
	}
	return nil
}

// putHalf stores f as f16 at b and reports whether it stayed finite.
func putHalf(b []byte, f float32) bool {
	h := F32ToF16(f)
	binary.LittleEndian.PutUint16(b, h)
	return h&0x7c00 != 0x7c00
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// cvtt converts f to an integer by truncation the way C's (int8_t)/(uint8_t)
// casts compile on x86-64 (cvttss2si into a 32-bit register, keep the low
// byte): NaN and values outside the int32 range become math.MinInt32. Only
// blocks whose scale is a subnormal float32 reach that case.
func cvtt(f float32) int32 {
	if !(f > -2147483648 && f < 2147483648) {
		return math.MinInt32
	}
	return int32(f)
}

// blockAbsMax is the value of largest magnitude in x (the first one on
// ties) and that magnitude, as ggml's q4_0/q5_0/q6_K/q3_K scans find it.
func blockAbsMax(x []float32) (m, amax float32) {
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, m = a, v
		}
	}
	return m, amax
}

// blockMinMax is the smallest and largest value of x (q4_1/q5_1).
func blockMinMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// inv is ggml's "d ? 1.0f/d : 0.0f".
func inv(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// quantQ8_0 is quantize_row_q8_0_ref: d = max|x|/127, q = roundf(x/d)
// (half away from zero). Layout: half d; int8 qs[32].
func quantQ8_0(x []float32, y []byte) bool {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	d := amax / 127
	id := inv(d)
	ok := putHalf(y, d)
	for j, v := range x {
		y[2+j] = byte(cvtt(float32(math.Round(float64(v * id)))))
	}
	return ok
}

// quantQ4_0 is quantize_row_q4_0_ref: the value of largest magnitude maps to
// -8, d = max/-8, and q = min(15, trunc(x/d + 8.5)). Layout: half d; qs[16]
// with x[j] in the low nibble of qs[j] and x[j+16] in the high one.
func quantQ4_0(x []float32, y []byte) bool {
	m, _ := blockAbsMax(x)
	d := m / -8
	id := inv(d)
	ok := putHalf(y, d)
	for j := 0; j < 16; j++ {
		x0 := float32(x[j] * id)
		x1 := float32(x[j+16] * id)
		q0 := min(15, int8(cvtt(x0+8.5)))
		q1 := min(15, int8(cvtt(x1+8.5)))
		y[2+j] = byte(q0) | byte(q1)<<4
	}
	return ok
}

// quantQ4_1 is quantize_row_q4_1_ref: d = (max-min)/15, m = min, q =
// min(15, trunc((x-min)/d + 0.5)). Layout: half d, m; qs[16].
func quantQ4_1(x []float32, y []byte) bool {
	lo, hi := blockMinMax(x)
	d := (hi - lo) / 15
	id := inv(d)
	ok := putHalf(y, d)
	ok = putHalf(y[2:], lo) && ok
	for j := 0; j < 16; j++ {
		x0 := float32((x[j] - lo) * id)
		x1 := float32((x[j+16] - lo) * id)
		q0 := min(15, int8(cvtt(x0+0.5)))
		q1 := min(15, int8(cvtt(x1+0.5)))
		y[4+j] = byte(q0) | byte(q1)<<4
	}
	return ok
}

// quantQ5_0 is quantize_row_q5_0_ref: as Q4_0 with d = max/-16 and q up to
// 31; the fifth bit of x[j] is bit j of the little-endian qh. Layout: half d;
// qh[4]; qs[16].
func quantQ5_0(x []float32, y []byte) bool {
	m, _ := blockAbsMax(x)
	d := m / -16
	id := inv(d)
	ok := putHalf(y, d)
	var qh uint32
	for j := 0; j < 16; j++ {
		x0 := float32(x[j] * id)
		x1 := float32(x[j+16] * id)
		q0 := byte(min(31, int8(cvtt(x0+16.5))))
		q1 := byte(min(31, int8(cvtt(x1+16.5))))
		y[6+j] = q0&0xf | (q1&0xf)<<4
		qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
	}
	binary.LittleEndian.PutUint32(y[2:], qh)
	return ok
}

// quantQ5_1 is quantize_row_q5_1_ref: d = (max-min)/31, m = min, q =
// trunc((x-min)/d + 0.5) (no clamp in ggml). Layout: half d, m; qh[4]; qs[16].
func quantQ5_1(x []float32, y []byte) bool {
	lo, hi := blockMinMax(x)
	d := (hi - lo) / 31
	id := inv(d)
	ok := putHalf(y, d)
	ok = putHalf(y[2:], lo) && ok
	var qh uint32
	for j := 0; j < 16; j++ {
		x0 := float32((x[j] - lo) * id)
		x1 := float32((x[j+16] - lo) * id)
		q0 := byte(cvtt(x0 + 0.5))
		q1 := byte(cvtt(x1 + 0.5))
		y[8+j] = q0&0xf | (q1&0xf)<<4
		qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
	}
	binary.LittleEndian.PutUint32(y[4:], qh)
	return ok
}
