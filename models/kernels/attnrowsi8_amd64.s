//go:build amd64 && !purego

#include "textflag.h"

// Attention over an int8 KV cache (int8 codes, a float32 scale per
// position and KV head), every head of a row at a time, the codes decoded
// in registers: each value is float32(code)·scale (VPMOVSXBD, VCVTDQ2PS,
// VMULPS), what ScaleI8 writes, so the results are the float32 kernels'
// bits on the decoded rows, without writing them to memory first (the
// 48 KB a block took bound the decode by store bandwidth).

// func attnRowsScoresI8AVX2(scores, q *float32, k *int8, sc *float32, kvh *int32, heads, d, n, sstride, kstride, hkv int, scale float32)
// scores[h][t] at scores + h·sstride + 4t (bytes), query head h at q[h·d],
// its key codes in row t at k + t·kstride + kvh[h]·d (bytes), its scale at
// sc[t·hkv + kvh[h]]. d is a multiple of 8. Four heads at a time are four
// chains (the last 1-3 heads one at a time), each a dot's one 8-lane
// accumulator and HSUM as in attnScoresAVX2's one-row loop.
TEXT ·attnRowsScoresI8AVX2(SB), NOSPLIT, $16-92
	MOVQ scores+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), BX
	MOVQ kvh+32(FP), R9
	MOVQ d+48(FP), R10
	SHLQ $2, R10             // bytes of a query head
	MOVQ n+56(FP), R12
	MOVQ sc+24(FP), AX
	MOVQ AX, scrow-16(SP)    // the scales of row t

ri_rows:
	TESTQ R12, R12
	JZ    ri_done
	MOVQ  DI, R11            // scores of head h, row t
	XORQ  R13, R13           // h
	MOVQ  SI, R8             // query head h

ri_heads:
	MOVQ         heads+40(FP), R14
	SUBQ         R13, R14        // heads left
	CMPQ         R14, $4
	JLT          ri_one
	LEAQ         (R8)(R10*2), CX // query head h+2
	LEAQ         (R8)(R10*1), R14
	MOVQ         R14, end-8(SP)  // the end of query head h
	MOVQ         scrow-16(SP), R14
	MOVLQSX      (R9)(R13*4), R15
	VBROADCASTSS (R14)(R15*4), Y12
	MOVLQSX      4(R9)(R13*4), R15
	VBROADCASTSS (R14)(R15*4), Y13
	MOVLQSX      8(R9)(R13*4), R15
	VBROADCASTSS (R14)(R15*4), Y14
	MOVLQSX      12(R9)(R13*4), R15
	VBROADCASTSS (R14)(R15*4), Y15
	MOVLQSX      (R9)(R13*4), R14
	IMULQ        d+48(FP), R14
	ADDQ         BX, R14         // key codes of head h
	MOVLQSX      4(R9)(R13*4), R15
	IMULQ        d+48(FP), R15
	ADDQ         BX, R15         // head h+1
	MOVLQSX      8(R9)(R13*4), DX
	IMULQ        d+48(FP), DX
	ADDQ         BX, DX          // head h+2
	MOVLQSX      12(R9)(R13*4), AX
	IMULQ        d+48(FP), AX
	ADDQ         BX, AX          // head h+3
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3

ri_cols:
	VMOVUPS     (R8), Y4
	VMOVUPS     (R8)(R10*1), Y5
	VMOVUPS     (CX), Y6
	VMOVUPS     (CX)(R10*1), Y7
	VPMOVSXBD   (R14), Y8
	VPMOVSXBD   (R15), Y9
	VPMOVSXBD   (DX), Y10
	VPMOVSXBD   (AX), Y11
	VCVTDQ2PS   Y8, Y8
	VCVTDQ2PS   Y9, Y9
	VCVTDQ2PS   Y10, Y10
	VCVTDQ2PS   Y11, Y11
	VMULPS      Y12, Y8, Y8
	VMULPS      Y13, Y9, Y9
	VMULPS      Y14, Y10, Y10
	VMULPS      Y15, Y11, Y11
	VFMADD231PS Y8, Y4, Y0
	VFMADD231PS Y9, Y5, Y1
	VFMADD231PS Y10, Y6, Y2
	VFMADD231PS Y11, Y7, Y3
	ADDQ        $32, R8
	ADDQ        $32, CX
	ADDQ        $8, R14
	ADDQ        $8, R15
	ADDQ        $8, DX
	ADDQ        $8, AX
	CMPQ        R8, end-8(SP)
	JLT         ri_cols

	VEXTRACTF128 $1, Y0, X8
	VADDPS       X8, X0, X0
	VMOVHLPS     X0, X0, X8
	VADDPS       X8, X0, X0
	VMOVSHDUP    X0, X8
	VADDSS       X8, X0, X0
	VMULSS       scale+88(FP), X0, X0
	VMOVSS       X0, (R11)
	ADDQ         sstride+64(FP), R11

	VEXTRACTF128 $1, Y1, X8
	VADDPS       X8, X1, X1
	VMOVHLPS     X1, X1, X8
	VADDPS       X8, X1, X1
	VMOVSHDUP    X1, X8
	VADDSS       X8, X1, X1
	VMULSS       scale+88(FP), X1, X1
	VMOVSS       X1, (R11)
	ADDQ         sstride+64(FP), R11

	VEXTRACTF128 $1, Y2, X8
	VADDPS       X8, X2, X2
	VMOVHLPS     X2, X2, X8
	VADDPS       X8, X2, X2
	VMOVSHDUP    X2, X8
	VADDSS       X8, X2, X2
	VMULSS       scale+88(FP), X2, X2
	VMOVSS       X2, (R11)
	ADDQ         sstride+64(FP), R11

	VEXTRACTF128 $1, Y3, X8
	VADDPS       X8, X3, X3
	VMOVHLPS     X3, X3, X8
	VADDPS       X8, X3, X3
	VMOVSHDUP    X3, X8
	VADDSS       X8, X3, X3
	VMULSS       scale+88(FP), X3, X3
	VMOVSS       X3, (R11)
	ADDQ         sstride+64(FP), R11

	LEAQ (CX)(R10*1), R8     // query head h+4 (CX walked query head h+2)
	ADDQ $4, R13
	JMP  ri_heads

ri_one:                          // fewer than 4 heads left: one at a time
	TESTQ        R14, R14
	JZ           ri_next
	LEAQ         (R8)(R10*1), R14
	MOVQ         R14, end-8(SP)
	MOVQ         scrow-16(SP), R14
	MOVLQSX      (R9)(R13*4), R15
	VBROADCASTSS (R14)(R15*4), Y12
	IMULQ        d+48(FP), R15
	ADDQ         BX, R15
	VXORPS       Y0, Y0, Y0

ri_one_cols:
	VMOVUPS     (R8), Y4
	VPMOVSXBD   (R15), Y8
	VCVTDQ2PS   Y8, Y8
	VMULPS      Y12, Y8, Y8
	VFMADD231PS Y8, Y4, Y0
	ADDQ        $32, R8          // ends at query head h+1
	ADDQ        $8, R15
	CMPQ        R8, end-8(SP)
	JLT         ri_one_cols

	VEXTRACTF128 $1, Y0, X8
	VADDPS       X8, X0, X0
	VMOVHLPS     X0, X0, X8
	VADDPS       X8, X0, X0
	VMOVSHDUP    X0, X8
	VADDSS       X8, X0, X0
	VMULSS       scale+88(FP), X0, X0
	VMOVSS       X0, (R11)
	ADDQ         sstride+64(FP), R11
	INCQ         R13
	JMP          ri_heads

ri_next:
	ADDQ $4, DI              // row t+1
	ADDQ kstride+72(FP), BX
	MOVQ hkv+80(FP), R14
	SHLQ $2, R14
	ADDQ R14, scrow-16(SP)
	DECQ R12
	JMP  ri_rows

ri_done:
	VZEROUPPER
	RET

// func attnRowsMixI8AVX2(out, w *float32, v *int8, sc *float32, kvh *int32, heads, d, n, wstride, vstride, hkv int)
// out[h][j] += Σ_t w[h][t]·(float32(code)·scale) over n value rows, a row
// at a time: out head h at out[h·d], w[h][t] at w + h·wstride + 4t
// (bytes), value codes of head h in row t at v + t·vstride + kvh[h]·d
// (bytes), its scale at sc[t·hkv + kvh[h]]. d is a multiple of 8. Each
// element takes its rows' FMAs in row order, as in attnMixAVX2.
TEXT ·attnRowsMixI8AVX2(SB), NOSPLIT, $8-88
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ v+16(FP), BX
	MOVQ kvh+32(FP), R9
	MOVQ d+48(FP), R10
	SHLQ $2, R10             // bytes of an out head
	MOVQ n+56(FP), R12
	MOVQ wstride+64(FP), R8
	MOVQ sc+24(FP), AX
	MOVQ AX, scrow-8(SP)     // the scales of row t

rmi_rows:
	TESTQ R12, R12
	JZ    rmi_done
	XORQ  R13, R13           // h
	MOVQ  DI, R11            // out head h
	MOVQ  SI, CX             // w[h][t]

rmi_heads:
	CMPQ         R13, heads+40(FP)
	JGE          rmi_next
	VBROADCASTSS (CX), Y8        // w[h][t]
	MOVLQSX      (R9)(R13*4), R15
	MOVQ         scrow-8(SP), R14
	VBROADCASTSS (R14)(R15*4), Y9 // its scale
	IMULQ        d+48(FP), R15
	ADDQ         BX, R15         // value codes of head h
	MOVQ         R11, AX
	LEAQ         (R11)(R10*1), R14 // the end of out head h

rmi_cols:
	VPMOVSXBD   (R15), Y1
	VCVTDQ2PS   Y1, Y1
	VMULPS      Y9, Y1, Y1
	VMOVUPS     (AX), Y0
	VFMADD231PS Y1, Y8, Y0
	VMOVUPS     Y0, (AX)
	ADDQ        $32, AX
	ADDQ        $8, R15
	CMPQ        AX, R14
	JLT         rmi_cols

	MOVQ R14, R11
	ADDQ R8, CX
	INCQ R13
	JMP  rmi_heads

rmi_next:
	ADDQ $4, SI              // row t+1
	ADDQ vstride+72(FP), BX
	MOVQ hkv+80(FP), R14
	SHLQ $2, R14
	ADDQ R14, scrow-8(SP)
	DECQ R12
	JMP  rmi_rows

rmi_done:
	VZEROUPPER
	RET
