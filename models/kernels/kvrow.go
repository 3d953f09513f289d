package kernels

import "math"

// The quantised KV cache's row encoders (models/kvcache.QuantizeRow): a
// head's (or int4 group's) scale from its largest magnitude, then each
// value divided by it and rounded to an int8 code (ScaleI8 decodes it), an
// FP8 E4M3 code (DequantizeFP8's format) or an int4 code (DequantizeLUT4's).
// Every new position of a quantised cache passes through here, a batch
// step's 192 rows of 768 values for bench110M.

// QuantizeScaledI8 is ScaleI8's inverse for one row of an int8 KV cache:
// s = max|x|/127 and q[i] = x[i]/s rounded to the nearest integer (ties to
// even), within ±127; s = 0 and q all zeros when x holds a NaN or an
// infinity or s would be 0 (x all zeros, or subnormals under 127 times the
// least one). Each quotient is one float32 division in both versions, so
// the assembly and Go give the same bits.
func QuantizeScaledI8(q []int8, x []float32) float32 {
	q = q[:len(x)]
	n := 0
	if useAsm {
		n = len(x) &^ 15
	}
	s := RowScale(x, 127)
	if s == 0 {
		clear(q)
		return 0
	}
	if n > 0 {
		divRoundI8Asm(q[:n], x[:n], s)
	}
	divRoundI8Go(q[n:], x[n:], s)
	return s
}

// roundMagic is 1.5·2^23: a float32 within ±2^22 plus it has no fraction
// bits left, so adding and taking it away rounds to an integer, ties to
// even (math.RoundToEven's result without the float64 round trip).
const roundMagic float32 = 12582912

func divRoundI8Go(q []int8, x []float32, s float32) {
	q = q[:len(x)]
	for i, v := range x {
		r := (v/s + roundMagic) - roundMagic
		q[i] = int8(min(max(r, -127), 127))
	}
}

// RowScale is the scale of a row coded up to ±top: max|x|/top, or 0 when x
// holds a NaN or an infinity or the quotient is 0 (x all zeros, or
// subnormals under top times the least one); a row of scale 0 is stored
// as zero codes.
func RowScale(x []float32, top float32) float32 {
	amax, ok := AbsMax(x)
	if s := amax / top; s != 0 && ok {
		return s
	}
	return 0
}

// AbsMax is max|x[i]| (NaN when an x[i] is NaN, as a plain max loop in
// Go gives) and whether every x[i] is finite (no NaN, no infinity): what a
// scaled quantiser needs to pick its scale.
func AbsMax(x []float32) (float32, bool) {
	n := 0
	if useAsm {
		n = len(x) &^ 15
	}
	var amax float32
	bad := false
	if n > 0 {
		amax, bad = absMaxAsm(x[:n])
	}
	for _, v := range x[n:] {
		a := abs32(v)
		bad = bad || a != a
		amax = max(amax, a)
	}
	if bad {
		return float32(math.NaN()), false
	}
	return amax, amax <= math.MaxFloat32
}

// DivEncodeE4M3 sets q[i] to the FP8 E4M3 code of x[i]/s (quant.EncodeFP8's
// code: nearest, ties to even, saturating at ±448, NaN 0x7F) for the
// longest prefix the assembly takes, and returns its length: 0 without the
// assembly, else a multiple of 8. The caller encodes the rest with
// quant.EncodeFP8, the definition this is tested against bit for bit.
func DivEncodeE4M3(q []uint8, x []float32, s float32) int {
	if !useAsm {
		return 0
	}
	n := len(x) &^ 7
	if n > 0 {
		divEncodeE4M3Asm(q[:n], x[:n], s)
	}
	return n
}

// DivRoundInt4 packs the int4 codes round(x[i]/s)+8 (ties to even, the
// rounded quotient within ±7) two to a byte, low nibble first, for the
// longest prefix of x the assembly takes, and returns its length: 0
// without the assembly, else a multiple of 32. x/s must not be NaN. The
// caller encodes the rest: quant.EncodeInt4 is the definition this is
// tested against bit for bit.
func DivRoundInt4(packed []byte, x []float32, s float32) int {
	if !useAsm {
		return 0
	}
	n := len(x) &^ 31
	if n > 0 {
		divRoundInt4Asm(packed[:n/2], x[:n], s)
	}
	return n
}
