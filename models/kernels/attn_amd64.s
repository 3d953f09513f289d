//go:build amd64 && !purego

#include "textflag.h"

// func attnScoresAVX2(scores, q, k *float32, d, stride, n int, scale float32)
// d is a multiple of 8. For each of the n key rows (stride floats apart):
// one 8-lane FMA accumulator over the row, a horizontal sum, times scale.
TEXT ·attnScoresAVX2(SB), NOSPLIT, $0-52
	MOVQ scores+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), BX
	MOVQ d+24(FP), CX
	MOVQ stride+32(FP), R8
	SHLQ $2, R8              // stride in bytes
	MOVQ n+40(FP), R9
	VMOVSS scale+48(FP), X5
	XORQ R10, R10            // t

scores_row:
	VXORPS Y0, Y0, Y0
	XORQ   AX, AX

scores_col:
	VMOVUPS     (SI)(AX*4), Y1
	VFMADD231PS (BX)(AX*4), Y1, Y0
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         scores_col

	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VMULSS       X5, X0, X0
	VMOVSS       X0, (DI)(R10*4)
	ADDQ         R8, BX
	INCQ         R10
	CMPQ         R10, R9
	JLT          scores_row
	VZEROUPPER
	RET

// func attnMixAVX2(out, w, v *float32, d, stride, n int)
// d is a multiple of 8. For each 8-column strip of out: add w[t]·v[t][strip]
// over the n rows (one FMA each, in row order), then store the strip.
TEXT ·attnMixAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ v+16(FP), BX
	MOVQ d+24(FP), CX
	MOVQ stride+32(FP), R8
	SHLQ $2, R8
	MOVQ n+40(FP), R9
	XORQ AX, AX              // column

mix_strip:
	VMOVUPS (DI)(AX*4), Y0
	LEAQ   (BX)(AX*4), DX    // &v[0][col]
	XORQ   R10, R10          // t

mix_row:
	VBROADCASTSS (SI)(R10*4), Y1
	VFMADD231PS  (DX), Y1, Y0
	ADDQ         R8, DX
	INCQ         R10
	CMPQ         R10, R9
	JLT          mix_row

	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     mix_strip
	VZEROUPPER
	RET
