package kernels

import (
	"fmt"
	"unsafe"
)

// Batched (prefill) versions of the per-row int8 and K-quant block
// products: n activation vectors, quantized per token, against one weight
// matrix. The rows are cut
// into tiles of about batchTile weight bytes; a tile stays in L1 while it
// meets every token of a chunk whose activations fit in L2, so each weight
// row comes from memory once per chunk of tokens instead of once per token.
// Every output is computed by the MatVec kernel for its row and token, so
// the result is bitwise equal to n MatVec calls.

const (
	batchTile  = 32 << 10  // weight bytes per row tile (L1 is 32-48 KiB)
	batchChunk = 256 << 10 // activation bytes per token chunk (L2 is 1 MiB)
)

// batch is one batched product: op names the MatVec it repeats.
type batch struct {
	op            int
	out           []float32
	qw            []int8    // int8 weights (MatVecI8)
	sw            []float32 // their per-row or per-block scales
	wb            []byte    // block weights
	qx            []int8    // [n][cols] activations
	dx            []float32 // per-token scales: [n] (I8) or [n][blocks]
	xsum          []int16   // [n][cols/16] (Q8_K)
	xp            []byte    // MatMulI8's token sums, or packK8's xd and sums, for the tiles (qtile.go)
	ntile         int       // whole 6-token tiles
	rows, cols, n int
}

// MatMulI8 computes, for t < n tokens and r < rows,
// out[t*rows+r] = float32(Σ_c q[r*cols+c]·xq[t*cols+c]) · (scale[r]·xs[t]):
// MatVecI8 for each token, xq [n][cols] quantized per token with QuantizeI8
// into scales xs[t]. Bitwise equal to n MatVecI8 calls.
func MatMulI8(out []float32, q []int8, scale []float32, xq []int8, xs []float32, rows, cols, n int) {
	if rows < 0 || cols < 0 || n < 0 || len(q) < rows*cols || len(scale) < rows || len(xq) < n*cols ||
		len(xs) < n || len(out) < n*rows {
		panic(fmt.Sprintf("kernels.MatMulI8: rows=%d cols=%d n=%d with len(out)=%d len(q)=%d len(scale)=%d len(xq)=%d len(xs)=%d",
			rows, cols, n, len(out), len(q), len(scale), len(xq), len(xs)))
	}
	runBatch(&batch{op: opMatVecI8, out: out, qw: q, sw: scale, qx: xq, dx: xs, rows: rows, cols: cols, n: n})
}

// MatMulQ4_K is MatVecQ4_K for n tokens (xq [n][cols], xd [n][cols/256],
// xsums [n][cols/16] from QuantizeQ8_K per token, or once over all n·cols
// values; out [n][rows]), bitwise equal to n calls.
func MatMulQ4_K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int) {
	checkBatchBlocks("MatMulQ4_K", out, w, xq, xd, xsums, rows, cols, n, QK, Q4_KBytes)
	runBatch(&batch{op: opMatVecQ4K, out: out, wb: w, qx: xq, dx: xd, xsum: xsums, rows: rows, cols: cols, n: n})
}

// MatMulQ5_K is MatMulQ4_K for Q5_K weights.
func MatMulQ5_K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int) {
	checkBatchBlocks("MatMulQ5_K", out, w, xq, xd, xsums, rows, cols, n, QK, Q5_KBytes)
	runBatch(&batch{op: opMatVecQ5K, out: out, wb: w, qx: xq, dx: xd, xsum: xsums, rows: rows, cols: cols, n: n})
}

// MatMulQ6_K is MatMulQ4_K for Q6_K weights.
func MatMulQ6_K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int) {
	checkBatchBlocks("MatMulQ6_K", out, w, xq, xd, xsums, rows, cols, n, QK, Q6_KBytes)
	runBatch(&batch{op: opMatVecQ6K, out: out, wb: w, qx: xq, dx: xd, xsum: xsums, rows: rows, cols: cols, n: n})
}

// MatMulQ2_K is MatMulQ4_K for Q2_K weights.
func MatMulQ2_K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int) {
	checkBatchBlocks("MatMulQ2_K", out, w, xq, xd, xsums, rows, cols, n, QK, Q2_KBytes)
	runBatch(&batch{op: opMatVecQ2K, out: out, wb: w, qx: xq, dx: xd, xsum: xsums, rows: rows, cols: cols, n: n})
}

// MatMulQ3_K is MatMulQ4_K for Q3_K weights.
func MatMulQ3_K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int) {
	checkBatchBlocks("MatMulQ3_K", out, w, xq, xd, xsums, rows, cols, n, QK, Q3_KBytes)
	runBatch(&batch{op: opMatVecQ3K, out: out, wb: w, qx: xq, dx: xd, xsum: xsums, rows: rows, cols: cols, n: n})
}

// MatMulIQ4_XS is MatMulQ4_K for IQ4_XS weights.
func MatMulIQ4_XS(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int) {
	checkBatchBlocks("MatMulIQ4_XS", out, w, xq, xd, xsums, rows, cols, n, QK, IQ4_XSBytes)
	runBatch(&batch{op: opMatVecIQ4XS, out: out, wb: w, qx: xq, dx: xd, xsum: xsums, rows: rows, cols: cols, n: n})
}

func checkBatchBlocks(fn string, out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n, bs, bb int) {
	if rows < 0 || cols < 0 || n < 0 || cols%bs != 0 || len(out) < n*rows || len(w) < rows*(cols/bs)*bb ||
		len(xq) < n*cols || len(xd) < n*(cols/bs) || (bs == QK && len(xsums) < n*(cols/16)) {
		panic(fmt.Sprintf("kernels.%s: rows=%d cols=%d (must be a multiple of %d) n=%d with len(out)=%d len(w)=%d (need %d) len(xq)=%d len(xd)=%d len(xsums)=%d",
			fn, rows, cols, bs, n, len(out), len(w), rows*(cols/bs)*bb, len(xq), len(xd), len(xsums)))
	}
}

// runBatch splits b over the pool or runs it on this goroutine.
func runBatch(b *batch) {
	if b.op == opMatVecI8 && i8TileOK(b.rows, b.cols, b.n) {
		b.ntile = b.n / tileTokens
		pb := packBufs.Get().(*packBuf)
		if cap(pb.b) < 4*b.n {
			pb.b = make([]byte, 4*b.n)
		}
		b.xp = pb.b[:4*b.n]
		packI8(unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b.xp))), b.n), b.qx, b.cols)
		defer packBufs.Put(pb)
	}
	if kTile8OK(b.op, b.n) {
		need := b.n / 8 * (b.cols / QK) * k8Bytes
		pb := packBufs.Get().(*packBuf)
		if cap(pb.b) < need {
			pb.b = make([]byte, need)
		}
		b.xp = pb.b[:need]
		packK8(b.xp, b.dx, b.xsum, b.cols/QK, b.n)
		defer packBufs.Put(pb)
	}
	if b.rows*b.cols*b.n >= 2*parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.bt = opBatch, *b
			j.rows = b.rows
			defaultPool.exec(4)
			return
		}
	}
	b.run(0, b.rows)
}

// run computes rows [r0, r1) of every token.
func (b *batch) run(r0, r1 int) {
	if r1 <= r0 || b.n == 0 {
		return
	}
	if kTileOK(b.op, b.n) {
		b.kTiledRange(r0, r1)
		return
	}
	if b.ntile > 0 && b.op == opMatVecI8 {
		b.i8TiledRange(r0, r1)
		return
	}
	rows, cols := b.rows, b.cols
	rowBytes, xds, xss := cols, 0, 0 // weight bytes per row; dx and xsum per token
	switch b.op {
	case opMatVecI8:
		xds = 1
	default:
		_, bb := blockGeom(b.op)
		rowBytes, xds, xss = cols/QK*bb, cols/QK, cols/16
	}
	rt := max(4, batchTile/max(rowBytes, 1)) &^ 3
	tc := max(1, batchChunk/max(cols, 1))
	for t0 := 0; t0 < b.n; t0 += tc {
		t1 := min(b.n, t0+tc)
		for ra := r0; ra < r1; ra += rt {
			rb := min(r1, ra+rt)
			for t := t0; t < t1; t++ {
				o, xq := b.out[t*rows:(t+1)*rows], b.qx[t*cols:(t+1)*cols]
				xd := b.dx[t*xds : (t+1)*xds]
				if b.op == opMatVecI8 {
					matVecI8Range(o, b.qw, b.sw, xq, xd[0], cols, ra, rb)
					continue
				}
				blockRange(b.op, o, b.wb, xq, xd, b.xsum[t*xss:(t+1)*xss], cols, ra, rb)
			}
		}
	}
}
