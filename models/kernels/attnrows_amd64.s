//go:build amd64 && !purego

#include "textflag.h"

// Attention over an f16 KV cache, every head of a row at a time. A head
// at a time (attnf16_amd64.s) strides through the rows, reading 128 bytes
// of each 1.5 KB row per pass, which the hardware prefetchers do not keep
// up with; these read each row once, in memory order, at about twice the
// speed (BenchmarkAttnColdKV). For float32 rows, 256 bytes a visit, the
// head-at-a-time kernels are as fast, so they have no twins here.

// func attnRowsScoresF16AVX2(scores, q *float32, k *uint16, koff *int32, heads, d, n, sstride, kstride int, scale float32)
// Every head's scores over n key rows stored as IEEE halves (an f16 KV
// cache), a row at a time, so the rows are read in the order they lie in
// memory: scores[h][t] at scores + h·sstride
// + 4t (bytes), query head h at q[h·d], its key in row t at k[t·kstride +
// koff[h]] (elements). heads is a multiple of 4, d of 8. Four heads are
// four independent chains, each a dot's one 8-lane accumulator and HSUM as
// in attnScoresF16AVX2's one-row loop, so each score has its bits.
TEXT ·attnRowsScoresF16AVX2(SB), NOSPLIT, $8-76
	MOVQ   scores+0(FP), DI
	MOVQ   q+8(FP), SI
	MOVQ   k+16(FP), BX
	MOVQ   koff+24(FP), R9
	MOVQ   d+40(FP), R10
	SHLQ   $2, R10           // bytes of a query head
	MOVQ   n+48(FP), R12
	VMOVSS scale+72(FP), X15

rs_rows:
	TESTQ R12, R12
	JZ    rs_done
	MOVQ  DI, R11            // scores of head h, row t
	XORQ  R13, R13           // h
	MOVQ  SI, R8             // query head h

rs_heads:
	CMPQ    R13, heads+32(FP)
	JGE     rs_next
	LEAQ    (R8)(R10*2), CX  // query head h+2
	LEAQ    (R8)(R10*1), R14
	MOVQ    R14, end-8(SP)   // the end of query head h
	MOVLQSX (R9)(R13*4), R14
	SHLQ $1, R14
	ADDQ    BX, R14          // key of head h
	MOVLQSX 4(R9)(R13*4), R15
	SHLQ $1, R15
	ADDQ    BX, R15          // key of head h+1
	MOVLQSX 8(R9)(R13*4), AX
	SHLQ $1, AX
	ADDQ    BX, AX           // key of head h+2
	MOVLQSX 12(R9)(R13*4), DX
	SHLQ $1, DX
	ADDQ    BX, DX           // key of head h+3
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3

rs_cols:
	VMOVUPS     (R8), Y4
	VMOVUPS     (R8)(R10*1), Y5
	VMOVUPS     (CX), Y6
	VMOVUPS     (CX)(R10*1), Y7
	VCVTPH2PS   (R14), Y8
	VFMADD231PS Y8, Y4, Y0
	VCVTPH2PS   (R15), Y9
	VFMADD231PS Y9, Y5, Y1
	VCVTPH2PS   (AX), Y10
	VFMADD231PS Y10, Y6, Y2
	VCVTPH2PS   (DX), Y11
	VFMADD231PS Y11, Y7, Y3
	ADDQ        $32, R8
	ADDQ        $32, CX
	ADDQ $16, R14
	ADDQ $16, R15
	ADDQ $16, AX
	ADDQ $16, DX
	CMPQ        R8, end-8(SP)
	JLT         rs_cols

	VEXTRACTF128 $1, Y0, X8
	VADDPS       X8, X0, X0
	VMOVHLPS     X0, X0, X8
	VADDPS       X8, X0, X0
	VMOVSHDUP    X0, X8
	VADDSS       X8, X0, X0
	VMULSS       X15, X0, X0
	VMOVSS       X0, (R11)
	ADDQ         sstride+56(FP), R11

	VEXTRACTF128 $1, Y1, X8
	VADDPS       X8, X1, X1
	VMOVHLPS     X1, X1, X8
	VADDPS       X8, X1, X1
	VMOVSHDUP    X1, X8
	VADDSS       X8, X1, X1
	VMULSS       X15, X1, X1
	VMOVSS       X1, (R11)
	ADDQ         sstride+56(FP), R11

	VEXTRACTF128 $1, Y2, X8
	VADDPS       X8, X2, X2
	VMOVHLPS     X2, X2, X8
	VADDPS       X8, X2, X2
	VMOVSHDUP    X2, X8
	VADDSS       X8, X2, X2
	VMULSS       X15, X2, X2
	VMOVSS       X2, (R11)
	ADDQ         sstride+56(FP), R11

	VEXTRACTF128 $1, Y3, X8
	VADDPS       X8, X3, X3
	VMOVHLPS     X3, X3, X8
	VADDPS       X8, X3, X3
	VMOVSHDUP    X3, X8
	VADDSS       X8, X3, X3
	VMULSS       X15, X3, X3
	VMOVSS       X3, (R11)
	ADDQ         sstride+56(FP), R11

	LEAQ (CX)(R10*1), R8     // query head h+4 (CX walked query head h+2)
	ADDQ $4, R13
	JMP  rs_heads

rs_next:
	ADDQ $4, DI              // row t+1
	MOVQ kstride+64(FP), R14
	SHLQ $1, R14
	ADDQ R14, BX
	DECQ R12
	JMP  rs_rows

rs_done:
	VZEROUPPER
	RET

// func attnRowsMixF16AVX2(out, w *float32, v *uint16, voff *int32, heads, d, n, wstride, vstride int)
// out[h][j] += Σ_t w[h][t]·v[t][h][j] over n value rows stored as IEEE
// halves, a row at a time, so the rows are read in the order they lie in
// memory: out head h at
// out[h·d], w[h][t] at w + h·wstride + 4t (bytes), value head h of row t at
// v[t·vstride + voff[h]] (elements). d is a multiple of 8. Each element
// takes its rows' FMAs in row order, as in attnMixF16AVX2.
TEXT ·attnRowsMixF16AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ v+16(FP), BX
	MOVQ voff+24(FP), R9
	MOVQ d+40(FP), R10
	SHLQ $2, R10             // bytes of an out head
	MOVQ n+48(FP), R12
	MOVQ wstride+56(FP), R8
	MOVQ vstride+64(FP), DX
	SHLQ $1, DX              // value row stride in bytes

rm_rows:
	TESTQ R12, R12
	JZ    rm_done
	XORQ  R13, R13           // h
	MOVQ  DI, R11            // out head h
	MOVQ  SI, CX             // w[h][t]

rm_heads:
	CMPQ         R13, heads+32(FP)
	JGE          rm_next
	VBROADCASTSS (CX), Y8
	MOVLQSX      (R9)(R13*4), R15
	SHLQ $1, R15
	ADDQ         BX, R15     // value head h, row t
	MOVQ         R11, AX
	LEAQ         (R11)(R10*1), R14 // the end of out head h

rm_cols:
	VMOVUPS     (AX), Y0
	VCVTPH2PS   (R15), Y1
	VFMADD231PS Y1, Y8, Y0
	VMOVUPS     Y0, (AX)
	ADDQ        $32, AX
	ADDQ $16, R15
	CMPQ        AX, R14
	JLT         rm_cols

	MOVQ R14, R11
	ADDQ R8, CX
	INCQ R13
	JMP  rm_heads

rm_next:
	ADDQ $4, SI              // row t+1
	ADDQ DX, BX
	DECQ R12
	JMP  rm_rows

rm_done:
	VZEROUPPER
	RET
