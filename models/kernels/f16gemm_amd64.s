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

	CMPQ CX, $4
	JLT  widen_loop

widen4_loop:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VCVTPH2PS 32(SI), Y2
	VCVTPH2PS 48(SI), Y3
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	VMOVUPS   Y2, 64(DI)
	VMOVUPS   Y3, 96(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	SUBQ      $4, CX
	CMPQ      CX, $4
	JGE       widen4_loop
	TESTQ     CX, CX
	JZ        widen_done

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

// func narrowF16AVX2(dst *uint16, src *float32, n int)
// dst[i] = src[i] as IEEE half, round to nearest even, for i < n (a
// multiple of 8).
TEXT ·narrowF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   narrow_done

narrow_loop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       narrow_loop

narrow_done:
	VZEROUPPER
	RET

// func roundF16AVX2(dst, src *float32, n int)
// dst[i] = src[i] rounded to IEEE half and back (round to nearest even), for
// the first n&^7 values.
TEXT ·roundF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   round_done

round_loop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VCVTPH2PS X1, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       round_loop

round_done:
	VZEROUPPER
	RET
