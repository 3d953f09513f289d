package kernels

import (
	"fmt"
	"sync"
	"unsafe"
)

// Interleaved 2-byte weights (f16 and bf16), repacked once at load: groups
// of HalfILRows rows, and in each group the columns 8 at a time, the 8
// halves of row 0, then of row 1, … of row 15 (256 bytes a chunk), so a
// one-token product reads one sequential stream where the row-major
// kernels read 8 rows (or 8 row pairs) at once: bench110M-f16's decode
// step 1.08-1.48× faster on AVX-512, 1.04-1.41× on AVX2 (BenchmarkDecodeF16,
// BENCHMARKS.md).
//
// Each row keeps its 8 float lanes (lane j: columns ≡ j mod 8, in order) and
// MatVec's horizontal sum, one row per half of a zmm (two per register), so
// MatMulF16IL and MatMulBF16IL give bitwise the results of MatMul on the
// widened row-major matrix, and the Prefill twins those of MatMulPrefill on
// it where they take the GEMM (AVX-512 CPUs; MatMul's elsewhere), on every
// implementation and thread count. The
// columns past the last in the last chunk are +0 (PackHalfIL clears them),
// as MatVec's masked tail loads are. The rows past the last in the last
// group are computed and never stored, so they may hold anything (+0 from
// PackHalfIL, the next rows in a group-aligned slice of a larger matrix).

// HalfILRows is the rows of a group of the interleaved 2-byte layout.
const HalfILRows = 16

// halfILChunk is the halves of one chunk of a group (16 rows × 8).
const halfILChunk = HalfILRows * 8

// HalfILLen is the length in halves of a [rows][cols] matrix interleaved.
func HalfILLen(rows, cols int) int {
	return (rows + HalfILRows - 1) / HalfILRows * ((cols + 7) / 8) * halfILChunk
}

// halfILGroup is the halves of one row group.
func halfILGroup(cols int) int { return (cols + 7) / 8 * halfILChunk }

// PackHalfIL writes the row-major [rows][cols] halves of w (f16 or bf16
// bits) into dst (HalfILLen(rows, cols)) interleaved.
func PackHalfIL(dst, w []uint16, rows, cols int) {
	if rows < 0 || cols < 0 || len(w) < rows*cols || len(dst) < HalfILLen(rows, cols) {
		panic(fmt.Sprintf("kernels.PackHalfIL: rows=%d cols=%d with len(w)=%d len(dst)=%d", rows, cols, len(w), len(dst)))
	}
	dst = dst[:HalfILLen(rows, cols)]
	clear(dst)
	gl := halfILGroup(cols)
	for r := 0; r < rows && cols > 0; r++ { // rows of no columns hold nothing
		d := dst[r/HalfILRows*gl+r%HalfILRows*8:]
		src := w[r*cols : (r+1)*cols]
		for c := 0; c < cols; c += 8 {
			copy(d[c/8*halfILChunk:][:8], src[c:min(cols, c+8)])
		}
	}
}

// HalfILIndex is the index of row r, column c of a matrix of cols columns
// in the interleaved layout.
func HalfILIndex(r, c, cols int) int {
	return r/HalfILRows*halfILGroup(cols) + c/8*halfILChunk + r%HalfILRows*8 + c%8
}

// halfILRows copies rows [r0, r1) of the interleaved w into dst row-major
// (for the Go kernels).
func halfILRows(dst, w []uint16, cols, r0, r1 int) {
	if cols == 0 {
		return // no halves, and no group to find them in
	}
	gl := halfILGroup(cols)
	full := cols &^ 7
	for r := r0; r < r1; r++ {
		src := w[r/HalfILRows*gl+r%HalfILRows*8:]
		d := dst[(r-r0)*cols : (r-r0+1)*cols]
		c := 0
		for ; c < full; c += 8 {
			*(*[8]uint16)(d[c:]) = *(*[8]uint16)(src[c/8*halfILChunk:])
		}
		if c < cols {
			copy(d[c:], src[c/8*halfILChunk:][:cols-c])
		}
	}
}

// MatMulF16IL computes, for t < n tokens, out[t*rows+r] = Σ_c
// f32(w[r][c])·x[t*cols+c], w the [rows][cols] f16 bits interleaved
// (PackHalfIL); out is [n][rows], x is [n][cols]. Bitwise MatMul on the
// widened weights.
func MatMulF16IL(out []float32, w []uint16, x []float32, rows, cols, n int) {
	checkHalfIL("MatMulF16IL", out, w, x, rows, cols, n)
	matMulHalfIL(wF16, out, w, x, rows, cols, n)
}

// MatMulF16ILPrefill is MatMulF16IL for the rows of a prefill
// (MatMulPrefill's contract): the GEMM on AVX-512 CPUs, bitwise
// MatMulPrefill on the widened weights; MatMulF16IL elsewhere.
func MatMulF16ILPrefill(out []float32, w []uint16, x []float32, rows, cols, n int) {
	checkHalfIL("MatMulF16ILPrefill", out, w, x, rows, cols, n)
	halfILPrefill(wF16, out, w, x, rows, cols, n)
}

// MatMulBF16IL is MatMulF16IL for bf16 weights.
func MatMulBF16IL(out []float32, w []uint16, x []float32, rows, cols, n int) {
	checkHalfIL("MatMulBF16IL", out, w, x, rows, cols, n)
	matMulHalfIL(wBF16, out, w, x, rows, cols, n)
}

// MatMulBF16ILPrefill is MatMulF16ILPrefill for bf16 weights.
func MatMulBF16ILPrefill(out []float32, w []uint16, x []float32, rows, cols, n int) {
	checkHalfIL("MatMulBF16ILPrefill", out, w, x, rows, cols, n)
	halfILPrefill(wBF16, out, w, x, rows, cols, n)
}

func checkHalfIL(fn string, out []float32, w []uint16, x []float32, rows, cols, n int) {
	if rows < 0 || cols < 0 || n < 0 ||
		len(w) < HalfILLen(rows, cols) || len(x) < n*cols || len(out) < n*rows {
		panic(fmt.Sprintf("kernels.%s: rows=%d cols=%d n=%d with len(out)=%d len(w)=%d len(x)=%d",
			fn, rows, cols, n, len(out), len(w), len(x)))
	}
}

// halfILPrefill is MatMulF16ILPrefill or MatMulBF16ILPrefill (k), its
// operands checked: the GEMM (f16gemm.go), widening its row blocks from the
// groups.
func halfILPrefill(k wkind, out []float32, w []uint16, x []float32, rows, cols, n int) {
	if n > 0 && gemmOK(rows, cols) && gemmAVX512 {
		gemmMatMulHalf(k, out, w, x, rows, cols, n)
		return
	}
	matMulHalfIL(k, out, w, x, rows, cols, n)
}

// matMulHalfIL is MatMulF16IL or MatMulBF16IL (k), its operands checked:
// one token by the interleaved matvec, several by the pair tiles (AVX-512)
// or matMulHalfILRange.
func matMulHalfIL(k wkind, out []float32, w []uint16, x []float32, rows, cols, n int) {
	if n == 1 {
		if rows*cols >= parallelMin {
			if j := defaultPool.acquire(); j != nil {
				j.op, j.out, j.wh, j.wk, j.x = opMatVecHalf, out, w, k, x
				j.rows, j.cols, j.n = rows, cols, 1
				defaultPool.exec(HalfILRows)
				return
			}
		}
		matVecHalfILRange(k, out, w, x, rows, cols, 0, rows)
		return
	}
	if pairTilesOK(cols, n) {
		pairMatMul(out, unsafe.Pointer(unsafe.SliceData(w)), k, x, rows, cols, n)
		return
	}
	if rows*cols*n >= parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.out, j.wh, j.wk, j.x = opMatMulHalf, out, w, k, x
			j.rows, j.cols, j.n = rows, cols, n
			defaultPool.exec(HalfILRows)
			return
		}
	}
	matMulHalfILRange(k, out, w, x, rows, cols, n, 0, rows)
}

// matVecHalfILRange computes rows [r0, r1) of the matvec, r0 a multiple
// of HalfILRows: a group at a time in assembly, else a row at a time
// copied out for dotHalfGo.
func matVecHalfILRange(k wkind, out []float32, w []uint16, x []float32, rows, cols, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	if useAsm && cols > 0 {
		gl := halfILGroup(cols)
		g0, g1 := r0/HalfILRows, min(r1, rows&^(HalfILRows-1))/HalfILRows
		if g1 > g0 {
			matVecHalfILAsm(k, out[r0:], w[g0*gl:], x, cols, g1-g0)
		}
		if r := g1 * HalfILRows; r < r1 { // the last group, rows past the end dropped
			var last [HalfILRows]float32
			matVecHalfILAsm(k, last[:], w[g1*gl:], x, cols, 1)
			copy(out[r:r1], last[:])
		}
		return
	}
	b := halfRowBufs.Get().(*halfRowBuf)
	if cap(b.h) < cols {
		b.h = make([]uint16, cols)
	}
	row := b.h[:cols]
	tab := f16Table()
	for r := r0; r < r1; r++ {
		halfILRows(row, w, cols, r, r+1)
		out[r] = dotHalfGo(k, tab, row, x[:cols])
	}
	halfRowBufs.Put(b)
}

// halfILBlock is the rows matMulHalfILRange copies out row-major at a
// time: about 128 KiB of them, which stay in L2 while every token meets
// them.
func halfILBlock(cols int) int {
	return max(HalfILRows, (64<<10)/max(cols, 1)/HalfILRows*HalfILRows)
}

// halfRowBuf holds row-major copies of interleaved rows (h, for the Go
// kernels) or a group's products (f, matMulHalfILPart).
type halfRowBuf struct {
	h []uint16
	f []float32
}

// halfRowBufs pools them, one per concurrent range.
var halfRowBufs = sync.Pool{New: func() any { return new(halfRowBuf) }}

// matMulHalfILRange computes rows [r0, r1) of every token (any r0, r1): in
// assembly whole groups by the interleaved 4×3 tiles and a group cut by r0
// or r1 by matMulHalfILPart; in Go matMulHalfRange on blocks of rows
// copied out row-major.
func matMulHalfILRange(k wkind, out []float32, w []uint16, x []float32, rows, cols, n, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	if useAsm && cols > 0 {
		g0 := (r0 + HalfILRows - 1) &^ (HalfILRows - 1) // the whole groups: [g0, g1)
		g1 := r1 &^ (HalfILRows - 1)
		if g0 > g1 { // r0 and r1 cut one group
			matMulHalfILPart(k, out, w, x, rows, cols, n, r0, r1)
			return
		}
		if r0 < g0 {
			matMulHalfILPart(k, out, w, x, rows, cols, n, r0, g0)
		}
		if g0 < g1 {
			matMulHalfILAsm(k, out, w, x, rows, cols, n, g0, g1)
		}
		if g1 < r1 {
			matMulHalfILPart(k, out, w, x, rows, cols, n, g1, r1)
		}
		return
	}
	rb := halfILBlock(cols)
	b := halfRowBufs.Get().(*halfRowBuf)
	if cap(b.h) < rb*cols {
		b.h = make([]uint16, rb*cols)
	}
	for b0 := r0; b0 < r1; b0 += rb {
		nr := min(rb, r1-b0)
		blk := b.h[:nr*cols]
		halfILRows(blk, w, cols, b0, b0+nr)
		matMulHalfRange(k, out[b0:], blk, x, rows, cols, n, 0, nr)
	}
	halfRowBufs.Put(b)
}

// matMulHalfILPart computes rows [r0, r1) of one group (the last of a
// matrix whose rows are not a multiple of 16, or one the GEMM's row blocks
// cut) for every token in assembly: the whole group into a buffer, by the
// interleaved 4×3 tiles, then the rows in range.
func matMulHalfILPart(k wkind, out []float32, w []uint16, x []float32, rows, cols, n, r0, r1 int) {
	g := r0 / HalfILRows
	b := halfRowBufs.Get().(*halfRowBuf)
	if cap(b.f) < n*HalfILRows {
		b.f = make([]float32, n*HalfILRows)
	}
	grp := b.f[:n*HalfILRows]
	matMulHalfILAsm(k, grp, w[g*halfILGroup(cols):], x, HalfILRows, cols, n, 0, HalfILRows)
	for t := 0; t < n; t++ {
		copy(out[t*rows+r0:t*rows+r1], grp[t*HalfILRows+r0-g*HalfILRows:])
	}
	halfRowBufs.Put(b)
}

// widenHalfIL widens rows [r0, r1) of the interleaved w of kind k into
// dst row-major (the GEMM's row block): the rows of a group chunk by chunk,
// in the order they are stored (read row by row, in 16 passes over each
// group's lines, the prefill ran at 0.9× the row-major one's speed).
func widenHalfIL(k wkind, dst []float32, w []uint16, cols, r0, r1 int) {
	gl := halfILGroup(cols)
	full := cols &^ 7
	for lo := r0; lo < r1; {
		hi := min(r1, (lo/HalfILRows+1)*HalfILRows)
		src := w[lo/HalfILRows*gl+lo%HalfILRows*8:]
		widenHalfILAsm(k, dst[(lo-r0)*cols:], src, full/8, hi-lo, cols)
		for r := lo; r < hi && full < cols; r++ {
			d := dst[(r-r0)*cols:]
			for c := full; c < cols; c++ {
				h := w[HalfILIndex(r, c, cols)]
				if k == wBF16 {
					d[c] = bf16ToF32(h)
				} else {
					d[c] = f16ToF32(h)
				}
			}
		}
		lo = hi
	}
}
