//go:build amd64 && !purego

#include "textflag.h"

// int8 weights with a float32 scale per row times a float32 vector, with the
// weights converted in registers (VPMOVSXBD, VCVTDQ2PS, VMULPS by the scale:
// exactly float32(q)·scale) and then the same FMA sequence per row as
// matVecAVX2 (one 8-lane accumulator, 8 columns at a time, the last cols%8
// columns as lanes 0..k-1, HSUM), so the result is bitwise MatVec of the
// dequantized matrix without storing it.

// i8perm<> entry k-1 (k = 1..7, 32 bytes): VPERMD indices moving lanes
// 8-k..7 of the row's last 8 weights to lanes 0..k-1.
DATA i8perm<>+0(SB)/8, $0x0000000000000007
DATA i8perm<>+8(SB)/8, $0x0000000000000000
DATA i8perm<>+16(SB)/8, $0x0000000000000000
DATA i8perm<>+24(SB)/8, $0x0000000000000000
DATA i8perm<>+32(SB)/8, $0x0000000700000006
DATA i8perm<>+40(SB)/8, $0x0000000000000000
DATA i8perm<>+48(SB)/8, $0x0000000000000000
DATA i8perm<>+56(SB)/8, $0x0000000000000000
DATA i8perm<>+64(SB)/8, $0x0000000600000005
DATA i8perm<>+72(SB)/8, $0x0000000000000007
DATA i8perm<>+80(SB)/8, $0x0000000000000000
DATA i8perm<>+88(SB)/8, $0x0000000000000000
DATA i8perm<>+96(SB)/8, $0x0000000500000004
DATA i8perm<>+104(SB)/8, $0x0000000700000006
DATA i8perm<>+112(SB)/8, $0x0000000000000000
DATA i8perm<>+120(SB)/8, $0x0000000000000000
DATA i8perm<>+128(SB)/8, $0x0000000400000003
DATA i8perm<>+136(SB)/8, $0x0000000600000005
DATA i8perm<>+144(SB)/8, $0x0000000000000007
DATA i8perm<>+152(SB)/8, $0x0000000000000000
DATA i8perm<>+160(SB)/8, $0x0000000300000002
DATA i8perm<>+168(SB)/8, $0x0000000500000004
DATA i8perm<>+176(SB)/8, $0x0000000700000006
DATA i8perm<>+184(SB)/8, $0x0000000000000000
DATA i8perm<>+192(SB)/8, $0x0000000200000001
DATA i8perm<>+200(SB)/8, $0x0000000400000003
DATA i8perm<>+208(SB)/8, $0x0000000600000005
DATA i8perm<>+216(SB)/8, $0x0000000000000007
GLOBL i8perm<>(SB), RODATA|NOPTR, $224

// tailmask<>: 8 all-ones lanes then 8 zero lanes (as in kernels_amd64.s).
DATA tailmask<>+0(SB)/8, $0xffffffffffffffff
DATA tailmask<>+8(SB)/8, $0xffffffffffffffff
DATA tailmask<>+16(SB)/8, $0xffffffffffffffff
DATA tailmask<>+24(SB)/8, $0xffffffffffffffff
DATA tailmask<>+32(SB)/8, $0
DATA tailmask<>+40(SB)/8, $0
DATA tailmask<>+48(SB)/8, $0
DATA tailmask<>+56(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

#define HSUM(Y, X, T) \
	VEXTRACTF128 $1, Y, T; \
	VADDPS       T, X, X; \
	VMOVHLPS     X, X, T; \
	VADDPS       T, X, X; \
	VMOVSHDUP    X, T; \
	VADDSS       T, X, X

// W8 sets Y9 to the 8 weights at MEM converted and scaled by SC.
#define W8(MEM, SC) \
	VPMOVSXBD MEM, Y9; \
	VCVTDQ2PS Y9, Y9; \
	VMULPS    SC, Y9, Y9

// WTAIL sets Y9 to the row's last k weights (row start P, cols CX) in lanes
// 0..k-1 and +0 elsewhere, as matVecAVX2's masked load gives.
#define WTAIL(P, SC) \
	VPMOVSXBD -8(P)(CX*1), Y9; \
	VPERMD    Y9, Y14, Y9; \
	VCVTDQ2PS Y9, Y9; \
	VMULPS    SC, Y9, Y9; \
	VANDPS    Y15, Y9, Y9

// func i8f32MatVecAVX2(out *float32, q *int8, scale, x *float32, rows, cols int)
// out[r] = Σ_c (float32(q[r*cols+c])·scale[r])·x[c]; cols >= 8. Four rows at
// a time share each x load, then one at a time.
//
// Registers: AX column, R11 cols&^7, CX cols, BX x, SI R8 R9 R10 rows,
// R12 scales, DX rows left, DI out; Y4-Y7 row scales, Y15 tail mask,
// Y14 tail permutation, Y0-Y3 accumulators.
TEXT ·i8f32MatVecAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ scale+16(FP), R12
	MOVQ x+24(FP), BX
	MOVQ rows+32(FP), DX
	MOVQ cols+40(FP), CX
	MOVQ CX, R11
	ANDQ $-8, R11
	MOVQ CX, AX
	ANDQ $7, AX
	JZ   f_block4
	LEAQ i8perm<>-32(SB), R13
	MOVQ AX, R14
	SHLQ $5, R14
	VMOVDQU (R13)(R14*1), Y14
	LEAQ tailmask<>+32(SB), R13
	SHLQ $2, AX
	SUBQ AX, R13
	VMOVDQU (R13), Y15

f_block4:
	CMPQ DX, $4
	JLT  f_block1
	LEAQ (SI)(CX*1), R8
	LEAQ (R8)(CX*1), R9
	LEAQ (R9)(CX*1), R10
	VBROADCASTSS (R12), Y4
	VBROADCASTSS 4(R12), Y5
	VBROADCASTSS 8(R12), Y6
	VBROADCASTSS 12(R12), Y7
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX

f_loop4:
	VMOVUPS     (BX)(AX*4), Y8
	W8((SI)(AX*1), Y4)
	VFMADD231PS Y8, Y9, Y0
	W8((R8)(AX*1), Y5)
	VFMADD231PS Y8, Y9, Y1
	W8((R9)(AX*1), Y6)
	VFMADD231PS Y8, Y9, Y2
	W8((R10)(AX*1), Y7)
	VFMADD231PS Y8, Y9, Y3
	ADDQ        $8, AX
	CMPQ        AX, R11
	JLT         f_loop4

	TESTQ $7, CX
	JZ    f_store4
	VMASKMOVPS  (BX)(AX*4), Y15, Y8
	WTAIL(SI, Y4)
	VFMADD231PS Y8, Y9, Y0
	WTAIL(R8, Y5)
	VFMADD231PS Y8, Y9, Y1
	WTAIL(R9, Y6)
	VFMADD231PS Y8, Y9, Y2
	WTAIL(R10, Y7)
	VFMADD231PS Y8, Y9, Y3

f_store4:
	HSUM(Y0, X0, X8)
	HSUM(Y1, X1, X8)
	HSUM(Y2, X2, X8)
	HSUM(Y3, X3, X8)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, 12(DI)
	ADDQ   $16, DI
	ADDQ   $16, R12
	LEAQ   (R10)(CX*1), SI
	SUBQ   $4, DX
	JMP    f_block4

f_block1:
	TESTQ DX, DX
	JZ    f_done
	VBROADCASTSS (R12), Y4
	VXORPS Y0, Y0, Y0
	XORQ   AX, AX

f_loop1:
	VMOVUPS     (BX)(AX*4), Y8
	W8((SI)(AX*1), Y4)
	VFMADD231PS Y8, Y9, Y0
	ADDQ        $8, AX
	CMPQ        AX, R11
	JLT         f_loop1

	TESTQ $7, CX
	JZ    f_store1
	VMASKMOVPS  (BX)(AX*4), Y15, Y8
	WTAIL(SI, Y4)
	VFMADD231PS Y8, Y9, Y0

f_store1:
	HSUM(Y0, X0, X8)
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   $4, R12
	ADDQ   CX, SI
	DECQ   DX
	JMP    f_block1

f_done:
	VZEROUPPER
	RET
