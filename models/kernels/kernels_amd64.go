//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// x/sys/cpu reports AVX2 (AVX-512) only when the OS saves ymm (zmm) state,
// so these are enough. F16C (VCVTPH2PS, for the block scales) comes with every
// AVX2 CPU.
var (
	hasAsm  = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C
	hostISA = func() isaLevel {
		x := cpu.X86
		switch {
		case !hasAsm:
			return isaGo
		case x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL && x.HasAVX512VNNI:
			return isaAVX512VNNI
		case x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL:
			return isaAVX512
		case hasAVXVNNI:
			return isaAVXVNNI
		}
		return isaAVX2
	}()
	// hasAVXVNNI: the VEX VPDPBUSD, which some AVX-512 CPUs (Zen 4, Ice
	// Lake) lack, so runnable checks it beside the level.
	hasAVXVNNI = hasAsm && cpu.X86.HasAVXVNNI
)

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func axpyAVX2(alpha float32, x, y *float32, n int)

//go:noescape
func matVecAVX2(out, w, x *float32, rows, cols int)

//go:noescape
func matMul4x3AVX2(out, w, x *float32, cols, ldo int, pf, pfEnd uintptr, pfStep int)

//go:noescape
func matMul4x2AVX2(out, w, x *float32, cols, ldo int, pf, pfEnd uintptr, pfStep int)

func spinPause()

//go:noescape
func findAVX2(x *float32, n int, v float32) int

func findAsm(x []float32, v float32) int { return findAVX2(unsafe.SliceData(x), len(x), v) }

// The wrappers below take slices whose lengths the exported functions have
// already checked; the asm does no bounds checking.

func dotAsm(a, b []float32) float32 {
	return dotAVX2(unsafe.SliceData(a), unsafe.SliceData(b), len(a))
}

func axpyAsm(alpha float32, x, y []float32) {
	axpyAVX2(alpha, unsafe.SliceData(x), unsafe.SliceData(y), len(x))
}

// matVecAsm computes rows [r0, r1) of out = w·x.
func matVecAsm(out, w, x []float32, cols, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	if r0 = rowPairs(out, unsafe.Pointer(unsafe.SliceData(w)), len(w), x, cols, r0, r1); r0 < r1 {
		matVecAVX2(&out[r0], ptrAt(w, r0*cols), unsafe.SliceData(x), r1-r0, cols)
	}
}

// matMulAsm computes rows [r0, r1) of every token of the batched product.
// Tokens go in chunks whose activations fit in L2; inside a chunk each 4-row
// block of w stays in L1 while it meets every token of the chunk, 3 at a time
// and 2 for the last two or four (8 = 3+3+2: each pass over the block costs
// its loads, and one 4x2 pass is cheaper than two one-token ones).
// Leftover tokens and rows use matVecAVX2, which sums in the same order, so
// MatMul and MatVec give the same bits.
//
// The tiles of a block fetch the block mmAhead blocks on, each its own
// share of it, so the fetches go out evenly while the block is computed (the
// whole of it from every tile sent three times the lines in the first
// tile's time and none after).
func matMulAsm(out, w, x []float32, rows, cols, n, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	tc := tokenChunk(cols)
	blk := uintptr(16 * cols) // bytes in a 4-row block
	for t0 := 0; t0 < n; t0 += tc {
		t1 := min(n, t0+tc)
		k := uintptr(tileCount(t1 - t0))
		step := 64
		if k == 1 {
			step = 128
		}
		r := r0
		for ; r+4 <= r1; r += 4 {
			wr := ptrAt(w, r*cols)
			pf := uintptr(unsafe.Pointer(wr)) + mmAhead*blk
			share := (blk + k - 1) / k
			for t := t0; t < t1; {
				o, xt := &out[t*rows+r], ptrAt(x, t*cols)
				switch t1 - t {
				case 1:
					matVecAVX2(o, wr, xt, 4, cols)
					t++
					continue
				case 2, 4:
					matMul4x2AVX2(o, wr, xt, cols, rows, pf, pf+share, step)
					t += 2
				default:
					matMul4x3AVX2(o, wr, xt, cols, rows, pf, pf+share, step)
					t += 3
				}
				pf += share
			}
		}
		if r < r1 {
			for t := t0; t < t1; t++ {
				matVecAVX2(&out[t*rows+r], ptrAt(w, r*cols), ptrAt(x, t*cols), r1-r, cols)
			}
		}
	}
}

// mmAhead is how many 4-row blocks ahead matMulAsm's tiles fetch: one, two
// and four measured the same (BENCHMARKS.md).
const mmAhead = 2

// tileCount is how many matMulAsm tiles n tokens take (3s, then 2s for the
// last two or four).
func tileCount(n int) int {
	switch {
	case n <= 3:
		return 1
	case n%3 == 1:
		return n/3 + 1 // ...3, 2, 2
	}
	return (n + 2) / 3
}

// ptrAt is &s[i] that also works for i == len(s) (cols == 0).
func ptrAt(s []float32, i int) *float32 {
	return (*float32)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), uintptr(i)*4))
}

//go:noescape
func i8DotsAVX2(dst *int32, w, x *int8, rows, cols int)

// i8DotsAsm writes the int32 dots of w's rows (first cols&^31 columns) with x
// into out's memory and returns that memory as []int32.
func i8DotsAsm(out []float32, w, x []int8, cols int) []int32 {
	dots := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(out))), len(out))
	i8DotsAVX2(unsafe.SliceData(dots), unsafe.SliceData(w), unsafe.SliceData(x), len(out), cols)
	return dots
}
