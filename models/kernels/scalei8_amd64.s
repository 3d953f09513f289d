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

// func absMaxAVX2(x *float32, n int) (amax float32, nan bool)
// n is a multiple of 16 (> 0). The max of |x[i]|, and whether any x[i] is
// a NaN (VMAXPS does not carry NaNs through, so an unordered compare does).
TEXT ·absMaxAVX2(SB), NOSPLIT, $0-21
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVL         $0x7fffffff, AX
	MOVL         AX, X15
	VPBROADCASTD X15, Y15
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y4, Y4, Y4
	VXORPS       Y5, Y5, Y5
	XORQ         AX, AX

absmax_loop:
	VANDPS  (SI)(AX*4), Y15, Y2
	VANDPS  32(SI)(AX*4), Y15, Y3
	VCMPPS  $3, Y2, Y2, Y6
	VCMPPS  $3, Y3, Y3, Y7
	VORPS   Y6, Y4, Y4
	VORPS   Y7, Y5, Y5
	VMAXPS  Y2, Y0, Y0
	VMAXPS  Y3, Y1, Y1
	ADDQ    $16, AX
	CMPQ    AX, CX
	JLT     absmax_loop

	VMAXPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X2
	VMAXPS       X2, X0, X0
	VMOVHLPS     X0, X0, X2
	VMAXPS       X2, X0, X0
	VPSHUFD      $1, X0, X2
	VMAXSS       X2, X0, X0
	VMOVSS       X0, amax+16(FP)
	VORPS        Y5, Y4, Y4
	VMOVMSKPS    Y4, AX
	TESTL        AX, AX
	SETNE        nan+20(FP)
	VZEROUPPER
	RET

// func divRoundI8AVX2(q *int8, x *float32, s float32, n int)
// n is a multiple of 16. Per value: x/s, rounded by adding and taking away
// 1.5·2^23, clamped to ±127, converted (exactly) to int32, then packed to
// int16 and int8 in order.
TEXT ·divRoundI8AVX2(SB), NOSPLIT, $0-32
	MOVQ         q+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS s+16(FP), Y15
	MOVQ         n+24(FP), CX
	MOVL         $0x4b400000, AX // 1.5·2^23
	MOVL         AX, X14
	VBROADCASTSS X14, Y14
	MOVL         $0x42fe0000, AX // 127
	MOVL         AX, X13
	VBROADCASTSS X13, Y13
	MOVL         $0xc2fe0000, AX // -127
	MOVL         AX, X12
	VBROADCASTSS X12, Y12
	XORQ         AX, AX

divround_loop:
	VMOVUPS      (SI)(AX*4), Y0
	VMOVUPS      32(SI)(AX*4), Y1
	VDIVPS       Y15, Y0, Y0
	VDIVPS       Y15, Y1, Y1
	VADDPS       Y14, Y0, Y0
	VADDPS       Y14, Y1, Y1
	VSUBPS       Y14, Y0, Y0
	VSUBPS       Y14, Y1, Y1
	VMAXPS       Y12, Y0, Y0
	VMAXPS       Y12, Y1, Y1
	VMINPS       Y13, Y0, Y0
	VMINPS       Y13, Y1, Y1
	VCVTTPS2DQ   Y0, Y0
	VCVTTPS2DQ   Y1, Y1
	VPACKSSDW    Y1, Y0, Y0      // per 128-bit lane: 4 of Y0, 4 of Y1
	VPERMQ       $0xd8, Y0, Y0   // the 16 values in order
	VEXTRACTI128 $1, Y0, X1
	VPACKSSWB    X1, X0, X0
	VMOVDQU      X0, (DI)(AX*1)
	ADDQ         $16, AX
	CMPQ         AX, CX
	JLT          divround_loop
	VZEROUPPER
	RET
