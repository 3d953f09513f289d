//go:build amd64 && !purego

#include "textflag.h"

// Constants of Go's math/exp_amd64.s (LN2U, LN2L, LOG2E, the Taylor
// coefficients), as float64, and the float64 sign / abs masks.
DATA tsilu<>+0(SB)/8, $1.4426950408889634073599246810018920 // LOG2E
DATA tsilu<>+8(SB)/8, $0.69314718055966295651160180568695068359375 // LN2U
DATA tsilu<>+16(SB)/8, $0.28235290563031577122588448175013436025525412068e-12 // LN2L
DATA tsilu<>+24(SB)/8, $0.0625
DATA tsilu<>+32(SB)/8, $2.4801587301587301587e-5
DATA tsilu<>+40(SB)/8, $1.9841269841269841270e-4
DATA tsilu<>+48(SB)/8, $1.3888888888888888889e-3
DATA tsilu<>+56(SB)/8, $8.3333333333333333333e-3
DATA tsilu<>+64(SB)/8, $4.1666666666666666667e-2
DATA tsilu<>+72(SB)/8, $1.6666666666666666667e-1
DATA tsilu<>+80(SB)/8, $0.5
DATA tsilu<>+88(SB)/8, $1.0
DATA tsilu<>+96(SB)/8, $2.0
DATA tsilu<>+104(SB)/8, $700.0
DATA tsilu<>+112(SB)/8, $0x8000000000000000 // sign
DATA tsilu<>+120(SB)/8, $0x7fffffffffffffff // abs
DATA tsilu<>+128(SB)/8, $1023
GLOBL tsilu<>(SB), RODATA|NOPTR, $136

// func torchSwiGLUAVX2(gate, up *float32, n int) int
// n is a multiple of 4. Per 4 values g (float64 lanes), stopping before the
// first group with |g| > 700 or NaN:
//   x = -g; k = round(x·LOG2E); r = ((x - k·LN2U) - k·LN2L)·(1/16) (fused);
//   p = Taylor(r) by Horner (fused); e = r·p; 3× e = e·(e+2); e = e·(e+2)+1
//   (fused); e = e·2^k; s = float32(1/(1+e)); gate = (g·s)·up in float32.
// Returns the number of values done.
TEXT ·torchSwiGLUAVX2(SB), NOSPLIT, $0-32
	MOVQ gate+0(FP), DI
	MOVQ up+8(FP), SI
	MOVQ n+16(FP), CX
	LEAQ tsilu<>(SB), R8
	VBROADCASTSD 0(R8), Y8   // LOG2E
	VBROADCASTSD 8(R8), Y9   // LN2U
	VBROADCASTSD 16(R8), Y10 // LN2L
	VBROADCASTSD 88(R8), Y11 // 1.0
	VBROADCASTSD 96(R8), Y12 // 2.0
	VBROADCASTSD 104(R8), Y13 // 700
	VBROADCASTSD 112(R8), Y14 // sign
	VBROADCASTSD 120(R8), Y15 // abs
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPS      (DI)(AX*4), X0
	VCVTPS2PD    X0, Y1
	VANDPD       Y15, Y1, Y2
	VCMPPD       $0x12, Y13, Y2, Y2 // |g| <= 700, false for NaN
	VMOVMSKPD    Y2, DX
	CMPL         DX, $15
	JNE          done
	VXORPD       Y14, Y1, Y3     // x = -g
	VMULPD       Y8, Y3, Y4
	VCVTPD2DQY   Y4, X5          // k, rounded to nearest even
	VCVTDQ2PD    X5, Y4
	VFNMADD231PD Y9, Y4, Y3
	VFNMADD231PD Y10, Y4, Y3
	VBROADCASTSD 24(R8), Y7
	VMULPD       Y7, Y3, Y3
	VBROADCASTSD 32(R8), Y6
	VBROADCASTSD 40(R8), Y7
	VFMADD213PD  Y7, Y3, Y6
	VBROADCASTSD 48(R8), Y7
	VFMADD213PD  Y7, Y3, Y6
	VBROADCASTSD 56(R8), Y7
	VFMADD213PD  Y7, Y3, Y6
	VBROADCASTSD 64(R8), Y7
	VFMADD213PD  Y7, Y3, Y6
	VBROADCASTSD 72(R8), Y7
	VFMADD213PD  Y7, Y3, Y6
	VBROADCASTSD 80(R8), Y7
	VFMADD213PD  Y7, Y3, Y6
	VFMADD213PD  Y11, Y3, Y6
	VMULPD       Y6, Y3, Y3
	VADDPD       Y12, Y3, Y6
	VMULPD       Y6, Y3, Y3
	VADDPD       Y12, Y3, Y6
	VMULPD       Y6, Y3, Y3
	VADDPD       Y12, Y3, Y6
	VMULPD       Y6, Y3, Y3
	VADDPD       Y12, Y3, Y6
	VFMADD213PD  Y11, Y6, Y3
	VPMOVSXDQ    X5, Y7          // 2^k: (k+1023)<<52
	VPBROADCASTQ 128(R8), Y6
	VPADDQ       Y6, Y7, Y7
	VPSLLQ       $52, Y7, Y7
	VMULPD       Y7, Y3, Y3
	VADDPD       Y11, Y3, Y3
	VDIVPD       Y3, Y11, Y3
	VCVTPD2PSY   Y3, X3
	VMULPS       X3, X0, X0
	VMULPS       (SI)(AX*4), X0, X0
	VMOVUPS      X0, (DI)(AX*4)
	ADDQ         $4, AX
	JMP          loop

done:
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET
