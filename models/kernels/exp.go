package kernels

import "math"

// Fast float32 e^x: Cephes' expf (range reduction x = n·ln2 + r with ln2 split
// in two, |r| <= ln2/2, then a degree-5 polynomial for (e^r-1-r)/r²) with
// the scaling by 2^n done as two multiplies so subnormal results round once.
// Every step is a float32 multiply or add in a fixed order (no FMA), so the
// AVX2 version (8 lanes) and the Go version give the same bits. Measured
// against math.Exp: max relative error below 2e-7 over the normal range
// (TestExpAccuracy); results that are subnormal are rounded once from an
// accurate value; NaN gives NaN, +Inf (and x > 88.72) +Inf, -Inf (and
// x < -103.97) 0.
const (
	expLo    = -104 // clamp: e^-104 rounds to 0
	expHi    = 88.8 // clamp: e^88.8 overflows to +Inf
	expLog2e = 1.44269504088896341
	expC1    = 0.693359375     // ln2 high part: 9 bits, so n·C1 is exact
	expC2    = -2.12194440e-4  // ln2 - C1
	expP0    = 1.9875691500e-4 // Cephes expf coefficients
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
)

// exp32 is the scalar reference; the explicit float32 conversions keep the
// compiler from fusing a multiply and an add (which the asm doesn't do).
func exp32(x float32) float32 {
	x = min(max(x, expLo), expHi)
	n := float32(math.RoundToEven(float64(float32(x * expLog2e))))
	r := x - float32(n*expC1)
	r -= float32(n * expC2)
	z := float32(r * r)
	p := float32(expP0)
	p = float32(p*r) + expP1
	p = float32(p*r) + expP2
	p = float32(p*r) + expP3
	p = float32(p*r) + expP4
	p = float32(p*r) + expP5
	y := float32(float32(p*z)+r) + 1
	ni := int32(n)
	n1 := ni >> 1
	y = float32(y * math.Float32frombits(uint32(n1+127)<<23))
	return float32(y * math.Float32frombits(uint32(ni-n1+127)<<23))
}

// softmaxExp sets x[i] = e^(x[i]-m) and returns their sum, accumulated in 8
// lanes (element i in lane i%8) reduced as hsum8, as the asm does.
func softmaxExp(x []float32, m float32) float32 {
	if useAsm && len(x) > 0 {
		return softmaxExpAsm(x, m)
	}
	var acc [8]float32
	for i, v := range x {
		e := exp32(v - m)
		x[i] = e
		acc[i&7] += e
	}
	return hsum8(&acc)
}

// SwiGLU sets gate[i] = gate[i]/(1+e^-gate[i]) · up[i] for i < len(gate)
// (SiLU(gate)·up, the gated MLP of Llama-style models), in float32 with
// exp32's e^x: within about 3e-7 relative of the exact value, the same bits
// on every implementation. len(up) >= len(gate).
func SwiGLU(gate, up []float32) {
	up = up[:len(gate)]
	if useAsm && len(gate) > 0 {
		swigluAsm(gate, up)
		return
	}
	for i, g := range gate {
		gate[i] = float32(g/(1+exp32(-g))) * up[i]
	}
}
