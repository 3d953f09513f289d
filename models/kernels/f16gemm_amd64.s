//go:build amd64 && !purego

#include "textflag.h"

// func widenF16AVX2(dst *float32, src *uint16, n int)
// dst[i] = float32(src[i]) for i < n (a multiple of 8), exact (VCVTPH2PS).
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   widen_done

widen_loop:
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       widen_loop

widen_done:
	VZEROUPPER
	RET
