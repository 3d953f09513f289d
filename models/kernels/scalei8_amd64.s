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
