//go:build amd64 && !purego

#include "textflag.h"

// func argmaxAVX2(x *float32, n int) int
// n a positive multiple of 8: the first index of the largest non-NaN value
// (the first -Inf when that is the largest), -1 when every value is NaN.
// VMAXPS returns its second source when either is NaN, and the running
// maxima are that source, so NaNs never enter them.
TEXT ·argmaxAVX2(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVL         $0xff800000, AX
	VMOVD        AX, X8
	VPBROADCASTD X8, Y8
	VMOVUPS      Y8, Y9
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-16, DX
	JZ           am_eight

am_loop:
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VMAXPS  Y8, Y0, Y8
	VMAXPS  Y9, Y1, Y9
	ADDQ    $16, AX
	CMPQ    AX, DX
	JLT     am_loop

am_eight:
	CMPQ    AX, CX
	JGE     am_reduce
	VMOVUPS (SI)(AX*4), Y0
	VMAXPS  Y8, Y0, Y8

am_reduce:
	VMAXPS       Y9, Y8, Y8
	VEXTRACTF128 $1, Y8, X0
	VMAXPS       X0, X8, X8
	VMOVHLPS     X8, X8, X0
	VMAXPS       X0, X8, X8
	VMOVSHDUP    X8, X0
	VMAXSS       X0, X8, X8
	VBROADCASTSS X8, Y8
	XORQ         AX, AX

am_find:
	VCMPPS    $0, (SI)(AX*4), Y8, Y0
	VMOVMSKPS Y0, DX
	TESTL     DX, DX
	JNZ       am_found
	ADDQ      $8, AX
	CMPQ      AX, CX
	JLT       am_find
	MOVQ      $-1, ret+16(FP)
	VZEROUPPER
	RET

am_found:
	BSFL DX, DX
	ADDQ DX, AX
	MOVQ AX, ret+16(FP)
	VZEROUPPER
	RET
