package kernels

import "math"

// Argmax is the first index of the largest value of x, NaNs skipped (+Inf
// the largest), or -1 when no value is above -Inf: greedy decoding's pick.
// The assembly finds the largest value in 8 lanes, then its first index.
func Argmax(x []float32) int {
	best, bv := -1, float32(math.Inf(-1))
	head := 0
	if useAsm && len(x) >= 8 {
		head = len(x) &^ 7
		if i := argmaxAsm(x[:head]); i >= 0 && x[i] > bv {
			best, bv = i, x[i]
		}
	}
	for i := head; i < len(x); i++ {
		if x[i] > bv {
			best, bv = i, x[i]
		}
	}
	return best
}

// argmaxGo is Argmax in one pass, the twin the assembly is tested against.
func argmaxGo(x []float32) int {
	best, bv := -1, float32(math.Inf(-1))
	for i, v := range x {
		if v > bv {
			best, bv = i, v
		}
	}
	return best
}
