//go:build amd64 && !purego

#include "textflag.h"

// func scaleI8AVX2(dst *float32, q *int8, s float32, n int)
// n is a multiple of 8. Per 8 values: sign-extend to int32 (VPMOVSXBD),
// convert to float32 (VCVTDQ2PS), multiply by the broadcast scale.
TEXT ·scaleI8AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ q+8(FP), SI
	VBROADCASTSS s+16(FP), Y3
	MOVQ n+24(FP), CX
	XORQ AX, AX

loop16:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JGT  loop8
	VPMOVSXBD (SI)(AX*1), Y0
	VPMOVSXBD 8(SI)(AX*1), Y1
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VMULPS    Y3, Y0, Y0
	VMULPS    Y3, Y1, Y1
	VMOVUPS   Y0, (DI)(AX*4)
	VMOVUPS   Y1, 32(DI)(AX*4)
	MOVQ      DX, AX
	JMP       loop16

loop8:
	CMPQ AX, CX
	JGE  done
	VPMOVSXBD (SI)(AX*1), Y0
	VCVTDQ2PS Y0, Y0
	VMULPS    Y3, Y0, Y0
	VMOVUPS   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	JMP       loop8

done:
	VZEROUPPER
	RET

// func scaleI8RowsAVX2(dst *float32, q *int8, sc *float32, d, n int)
// n runs of d values (d a multiple of 8, n >= 1), run i scaled by sc[i],
// each value as in scaleI8AVX2.
TEXT ·scaleI8RowsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ sc+16(FP), BX
	MOVQ d+24(FP), CX
	MOVQ n+32(FP), R8

rows_run:
	VBROADCASTSS (BX), Y3
	XORQ         AX, AX

rows_loop:
	VPMOVSXBD (SI)(AX*1), Y0
	VCVTDQ2PS Y0, Y0
	VMULPS    Y3, Y0, Y0
	VMOVUPS   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	CMPQ      AX, CX
	JLT       rows_loop

	ADDQ CX, SI
	LEAQ (DI)(CX*4), DI
	ADDQ $4, BX
	DECQ R8
	JNZ  rows_run

	VZEROUPPER
	RET
