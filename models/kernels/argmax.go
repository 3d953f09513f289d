package kernels

import "math"

// Argmax is the first index of the largest value of x, NaNs skipped (+Inf
// the largest), or -1 when no value is above -Inf: greedy decoding's pick.
// The assembly takes the largest value in 8 lanes (maxAsm), then finds its
// first index.
func Argmax(x []float32) int {
	if !useAsm || len(x) < 8 {
		return argmaxGo(x)
	}
	m := maxAsm(x)
	if !(m > float32(math.Inf(-1))) {
		return -1
	}
	head := len(x) &^ 7
	if i := findAsm(x[:head], m); i >= 0 {
		return i
	}
	for i := head; i < len(x); i++ {
		if x[i] == m {
			return i
		}
	}
	return -1 // not reached: m is one of x
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
