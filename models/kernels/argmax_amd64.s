//go:build amd64 && !purego

#include "textflag.h"

// func findAVX2(x *float32, n int, v float32) int
// The first index i < n (a positive multiple of 8) with x[i] == v, or -1.
TEXT ·findAVX2(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS v+16(FP), Y8
	XORQ         AX, AX

fd_loop:
	VCMPPS    $0, (SI)(AX*4), Y8, Y0
	VMOVMSKPS Y0, DX
	TESTL     DX, DX
	JNZ       fd_found
	ADDQ      $8, AX
	CMPQ      AX, CX
	JLT       fd_loop
	MOVQ      $-1, ret+24(FP)
	VZEROUPPER
	RET

fd_found:
	BSFL DX, DX
	ADDQ DX, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET
