//go:build amd64 && !purego

#include "textflag.h"

// Block-quantized weights (GGUF layouts) × int8 activations, one row per
// loop. The integer work follows ggml's AVX2 kernels
// (ggml-cpu/arch/x86/quants.c, ggml_vec_dot_q4_0_q8_0 and
// ggml_vec_dot_q{4,5,6}_K_q8_K): unsigned weight values × signed activations
// with VPMADDUBSW, then VPMADDWD by the sub-block scales (or by ones). The
// float steps are the exact sequence the Go versions in qblock.go perform
// (no FMA), so both give the same bits. Loads never reach past a block's
// last byte.

// Shuffles that broadcast word k of each 128-bit lane: k4shuf entry k (32
// bytes) picks word k in both lanes (Q4_K/Q5_K sub-block scales); k6shuf
// entry c picks word 2c in the low lane and 2c+1 in the high lane (Q6_K: the
// two 16-value halves of a 32-value chunk have their own scales).
DATA k4shuf<>+0(SB)/8, $0x0100010001000100
DATA k4shuf<>+8(SB)/8, $0x0100010001000100
DATA k4shuf<>+16(SB)/8, $0x0100010001000100
DATA k4shuf<>+24(SB)/8, $0x0100010001000100
DATA k4shuf<>+32(SB)/8, $0x0302030203020302
DATA k4shuf<>+40(SB)/8, $0x0302030203020302
DATA k4shuf<>+48(SB)/8, $0x0302030203020302
DATA k4shuf<>+56(SB)/8, $0x0302030203020302
DATA k4shuf<>+64(SB)/8, $0x0504050405040504
DATA k4shuf<>+72(SB)/8, $0x0504050405040504
DATA k4shuf<>+80(SB)/8, $0x0504050405040504
DATA k4shuf<>+88(SB)/8, $0x0504050405040504
DATA k4shuf<>+96(SB)/8, $0x0706070607060706
DATA k4shuf<>+104(SB)/8, $0x0706070607060706
DATA k4shuf<>+112(SB)/8, $0x0706070607060706
DATA k4shuf<>+120(SB)/8, $0x0706070607060706
DATA k4shuf<>+128(SB)/8, $0x0908090809080908
DATA k4shuf<>+136(SB)/8, $0x0908090809080908
DATA k4shuf<>+144(SB)/8, $0x0908090809080908
DATA k4shuf<>+152(SB)/8, $0x0908090809080908
DATA k4shuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4shuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4shuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4shuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL k4shuf<>(SB), RODATA|NOPTR, $256

DATA k6shuf<>+0(SB)/8, $0x0100010001000100
DATA k6shuf<>+8(SB)/8, $0x0100010001000100
DATA k6shuf<>+16(SB)/8, $0x0302030203020302
DATA k6shuf<>+24(SB)/8, $0x0302030203020302
DATA k6shuf<>+32(SB)/8, $0x0504050405040504
DATA k6shuf<>+40(SB)/8, $0x0504050405040504
DATA k6shuf<>+48(SB)/8, $0x0706070607060706
DATA k6shuf<>+56(SB)/8, $0x0706070607060706
DATA k6shuf<>+64(SB)/8, $0x0908090809080908
DATA k6shuf<>+72(SB)/8, $0x0908090809080908
DATA k6shuf<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k6shuf<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k6shuf<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k6shuf<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k6shuf<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k6shuf<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL k6shuf<>(SB), RODATA|NOPTR, $128

// HSUM reduces the 8 float lanes of Y (low half X) into X's low lane:
// ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)), as hsum8 in qblock.go.
#define HSUM(Y, X, T) \
	VEXTRACTF128 $1, Y, T; \
	VADDPS       T, X, X; \
	VMOVHLPS     X, X, T; \
	VADDPS       T, X, X; \
	VMOVSHDUP    X, T; \
	VADDSS       T, X, X

// HSUMD reduces the 8 int32 lanes of Y (low half X) into X's low lane.
#define HSUMD(Y, X, T) \
	VEXTRACTI128 $1, Y, T; \
	VPADDD       T, X, X; \
	VPSHUFD      $0x4e, X, T; \
	VPADDD       T, X, X; \
	VPSHUFD      $0xb1, X, T; \
	VPADDD       T, X, X

// BYTES sets every byte of Y (low half X) to the byte in V (via AX).
#define BYTES(V, X, Y) \
	MOVL         V, AX; \
	VMOVD        AX, X; \
	VPBROADCASTD X, Y

// Q40ROW adds one Q4_0 block of the row at P to the 8 lanes of ACC: the
// nibbles (unsigned, low = values 0-15, high = 16-31) times x (Y4) by
// VPMADDUBSW, minus 8·x per pair (Y5, shared by the rows), so lane l of the
// int32 vector is the dot of values 4l..4l+3 with the nibbles as q-8 (no
// overflow: pairs are at most 2·15·128). Then ACC += float(lanes)·(d·xd),
// xd broadcast in Y6.
#define Q40ROW(P, ACC) \
	VMOVDQU      2(P), X0; \
	VPSRLW       $4, X0, X1; \
	VINSERTI128  $1, X1, Y0, Y0; \
	VPAND        Y15, Y0, Y0; \
	VPMADDUBSW   Y4, Y0, Y0; \
	VPSUBW       Y5, Y0, Y0; \
	VPMADDWD     Y12, Y0, Y0; \
	VCVTDQ2PS    Y0, Y0; \
	VPBROADCASTW (P), X2; \
	VCVTPH2PS    X2, Y2; \
	VMULPS       Y6, Y2, Y2; \
	VMULPS       Y2, Y0, Y0; \
	VADDPS       Y0, ACC, ACC

// Q40X loads the block's x (Y4), 8·x pair sums (Y5) and xd (Y6).
#define Q40X \
	VMOVDQU      (BX), Y4; \
	VPMADDUBSW   Y4, Y14, Y5; \
	VBROADCASTSS (R8), Y6

// func q40DotsAVX2(out *float32, w *byte, x *int8, xd *float32, rows, nb int)
// out[r] = dot(Q4_0 row r, Q8_0 x) with nb blocks per row. Rows go in pairs
// sharing the x work: row i with row i+rows/2, so the weights are read as
// two long sequential streams (pairing neighbouring rows made many short
// streams and halved the speed from DRAM); an odd last row goes alone.
//
// Registers: SI R9 the two rows' blocks, DI R11 their outputs, R10 row
// bytes, BX x, R8 xd, CX blocks left, DX pairs left; Y15 0x0f, Y14 8,
// Y12 int16 ones, Y13 Y11 accumulators.
TEXT ·q40DotsAVX2(SB), NOSPLIT, $0-48
	MOVQ     out+0(FP), DI
	MOVQ     w+8(FP), SI
	MOVQ     rows+32(FP), DX
	SHRQ     $1, DX
	MOVQ     nb+40(FP), R10
	IMULQ    $18, R10
	MOVQ     DX, R9
	IMULQ    R10, R9
	ADDQ     SI, R9
	LEAQ     (DI)(DX*4), R11
	BYTES($0x0f0f0f0f, X15, Y15)
	BYTES($0x08080808, X14, Y14)
	VPCMPEQW Y12, Y12, Y12
	VPSRLW   $15, Y12, Y12

q40_pair:
	TESTQ  DX, DX
	JZ     q40_odd
	MOVQ   x+16(FP), BX
	MOVQ   xd+24(FP), R8
	MOVQ   nb+40(FP), CX
	VXORPS Y13, Y13, Y13
	VXORPS Y11, Y11, Y11
	TESTQ  CX, CX
	JZ     q40_store2

q40_block2:
	Q40X
	Q40ROW(SI, Y13)
	Q40ROW(R9, Y11)
	ADDQ $18, SI
	ADDQ $18, R9
	ADDQ $32, BX
	ADDQ $4, R8
	DECQ CX
	JNZ  q40_block2

q40_store2:
	HSUM(Y13, X13, X0)
	HSUM(Y11, X11, X0)
	VMOVSS X13, (DI)
	VMOVSS X11, (R11)
	ADDQ   $4, DI
	ADDQ   $4, R11
	DECQ   DX
	JMP    q40_pair

q40_odd:
	TESTQ  $1, rows+32(FP)
	JZ     q40_done
	MOVQ   x+16(FP), BX
	MOVQ   xd+24(FP), R8
	MOVQ   nb+40(FP), CX
	VXORPS Y13, Y13, Y13
	TESTQ  CX, CX
	JZ     q40_store1

q40_block1:
	Q40X
	Q40ROW(R9, Y13)
	ADDQ $18, R9
	ADDQ $32, BX
	ADDQ $4, R8
	DECQ CX
	JNZ  q40_block1

q40_store1:
	HSUM(Y13, X13, X0)
	VMOVSS X13, (R11)

q40_done:
	VZEROUPPER
	RET

// Q80ROW adds one GGUF Q8_0 block (half d, 32 int8) of the row at P to the
// 8 lanes of ACC: |w| is the unsigned operand and x takes w's sign (as
// ggml's mul_sum_i8_pairs), so a weight of -128 is fine; x must not be -128
// (QuantizeQ8_0 never makes it). Lanes and float steps as Q40ROW.
#define Q80ROW(P, ACC) \
	VMOVDQU      2(P), Y0; \
	VPSIGNB      Y0, Y4, Y1; \
	VPABSB       Y0, Y0; \
	VPMADDUBSW   Y1, Y0, Y0; \
	VPMADDWD     Y12, Y0, Y0; \
	VCVTDQ2PS    Y0, Y0; \
	VPBROADCASTW (P), X2; \
	VCVTPH2PS    X2, Y2; \
	VMULPS       Y6, Y2, Y2; \
	VMULPS       Y2, Y0, Y0; \
	VADDPS       Y0, ACC, ACC

// Q80X loads the block's x (Y4) and xd (Y6).
#define Q80X \
	VMOVDQU      (BX), Y4; \
	VBROADCASTSS (R8), Y6

// func q80BDotsAVX2(out *float32, w *byte, x *int8, xd *float32, rows, nb int)
// out[r] = dot(Q8_0 row r in GGUF's bytes, Q8_0 x) with nb blocks per row;
// the same loop as q40DotsAVX2 (rows i and i+rows/2 together) with Q80ROW.
TEXT ·q80BDotsAVX2(SB), NOSPLIT, $0-48
	MOVQ     out+0(FP), DI
	MOVQ     w+8(FP), SI
	MOVQ     rows+32(FP), DX
	SHRQ     $1, DX
	MOVQ     nb+40(FP), R10
	IMULQ    $34, R10
	MOVQ     DX, R9
	IMULQ    R10, R9
	ADDQ     SI, R9
	LEAQ     (DI)(DX*4), R11
	VPCMPEQW Y12, Y12, Y12
	VPSRLW   $15, Y12, Y12

q80_pair:
	TESTQ  DX, DX
	JZ     q80_odd
	MOVQ   x+16(FP), BX
	MOVQ   xd+24(FP), R8
	MOVQ   nb+40(FP), CX
	VXORPS Y13, Y13, Y13
	VXORPS Y11, Y11, Y11
	TESTQ  CX, CX
	JZ     q80_store2

q80_block2:
	Q80X
	Q80ROW(SI, Y13)
	Q80ROW(R9, Y11)
	ADDQ $34, SI
	ADDQ $34, R9
	ADDQ $32, BX
	ADDQ $4, R8
	DECQ CX
	JNZ  q80_block2

q80_store2:
	HSUM(Y13, X13, X0)
	HSUM(Y11, X11, X0)
	VMOVSS X13, (DI)
	VMOVSS X11, (R11)
	ADDQ   $4, DI
	ADDQ   $4, R11
	DECQ   DX
	JMP    q80_pair

q80_odd:
	TESTQ  $1, rows+32(FP)
	JZ     q80_done
	MOVQ   x+16(FP), BX
	MOVQ   xd+24(FP), R8
	MOVQ   nb+40(FP), CX
	VXORPS Y13, Y13, Y13
	TESTQ  CX, CX
	JZ     q80_store1

q80_block1:
	Q80X
	Q80ROW(R9, Y13)
	ADDQ $34, R9
	ADDQ $32, BX
	ADDQ $4, R8
	DECQ CX
	JNZ  q80_block1

q80_store1:
	HSUM(Y13, X13, X0)
	VMOVSS X13, (R11)

q80_done:
	VZEROUPPER
	RET

// Q5_0 fifth bits to bytes as ggml's bytes_from_bits_32: broadcast the 32
// bits, give byte i the qh byte i/8 (q5shuf), set every bit but bit i%8
// (q5bits); the byte is all ones iff element i's bit is set.
DATA q5shuf<>+0(SB)/8, $0x0000000000000000
DATA q5shuf<>+8(SB)/8, $0x0101010101010101
DATA q5shuf<>+16(SB)/8, $0x0202020202020202
DATA q5shuf<>+24(SB)/8, $0x0303030303030303
GLOBL q5shuf<>(SB), RODATA|NOPTR, $32
DATA q5bits<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL q5bits<>(SB), RODATA|NOPTR, $32

// Q50ROW adds one Q5_0 block (half d, 4 bytes of fifth bits, 16 bytes of
// nibbles) of the row at P to ACC: value = (nibble | bit<<4) - 16, made as
// nibble | 0xf0 where the bit is clear (ggml's q5_0 trick), then the sign
// trick with x (Y4) and |x| (Y5). Lanes and float steps as Q40ROW.
#define Q50ROW(P, ACC) \
	VMOVDQU      6(P), X0; \
	VPSRLW       $4, X0, X1; \
	VINSERTI128  $1, X1, Y0, Y0; \
	VPAND        Y15, Y0, Y0; \
	VPBROADCASTD 2(P), Y1; \
	VPSHUFB      Y13, Y1, Y1; \
	VPOR         Y12, Y1, Y1; \
	VPCMPEQB     Y11, Y1, Y1; \
	VPANDN       Y14, Y1, Y1; \
	VPOR         Y1, Y0, Y0; \
	VPSIGNB      Y4, Y0, Y0; \
	VPMADDUBSW   Y0, Y5, Y0; \
	VPMADDWD     Y10, Y0, Y0; \
	VCVTDQ2PS    Y0, Y0; \
	VPBROADCASTW (P), X2; \
	VCVTPH2PS    X2, Y2; \
	VMULPS       Y6, Y2, Y2; \
	VMULPS       Y2, Y0, Y0; \
	VADDPS       Y0, ACC, ACC

#define Q50X \
	VMOVDQU      (BX), Y4; \
	VPABSB       Y4, Y5; \
	VBROADCASTSS (R8), Y6

// func q50DotsAVX2(out *float32, w *byte, x *int8, xd *float32, rows, nb int)
// out[r] = dot(Q5_0 row r, Q8_0 x): the loop of q40DotsAVX2 (rows i and
// i+rows/2 together) with Q50ROW. Y15 0x0f, Y14 0xf0, Y13 q5shuf, Y12
// q5bits, Y11 all ones, Y10 int16 ones, Y9 Y8 accumulators.
TEXT ·q50DotsAVX2(SB), NOSPLIT, $0-48
	MOVQ     out+0(FP), DI
	MOVQ     w+8(FP), SI
	MOVQ     rows+32(FP), DX
	SHRQ     $1, DX
	MOVQ     nb+40(FP), R10
	IMULQ    $22, R10
	MOVQ     DX, R9
	IMULQ    R10, R9
	ADDQ     SI, R9
	LEAQ     (DI)(DX*4), R11
	BYTES($0x0f0f0f0f, X15, Y15)
	BYTES($0xf0f0f0f0, X14, Y14)
	VMOVDQU  q5shuf<>(SB), Y13
	VMOVDQU  q5bits<>(SB), Y12
	VPCMPEQB Y11, Y11, Y11
	VPCMPEQW Y10, Y10, Y10
	VPSRLW   $15, Y10, Y10

q50_pair:
	TESTQ  DX, DX
	JZ     q50_odd
	MOVQ   x+16(FP), BX
	MOVQ   xd+24(FP), R8
	MOVQ   nb+40(FP), CX
	VXORPS Y9, Y9, Y9
	VXORPS Y8, Y8, Y8
	TESTQ  CX, CX
	JZ     q50_store2

q50_block2:
	Q50X
	Q50ROW(SI, Y9)
	Q50ROW(R9, Y8)
	ADDQ $22, SI
	ADDQ $22, R9
	ADDQ $32, BX
	ADDQ $4, R8
	DECQ CX
	JNZ  q50_block2

q50_store2:
	HSUM(Y9, X9, X0)
	HSUM(Y8, X8, X0)
	VMOVSS X9, (DI)
	VMOVSS X8, (R11)
	ADDQ   $4, DI
	ADDQ   $4, R11
	DECQ   DX
	JMP    q50_pair

q50_odd:
	TESTQ  $1, rows+32(FP)
	JZ     q50_done
	MOVQ   x+16(FP), BX
	MOVQ   xd+24(FP), R8
	MOVQ   nb+40(FP), CX
	VXORPS Y9, Y9, Y9
	TESTQ  CX, CX
	JZ     q50_store1

q50_block1:
	Q50X
	Q50ROW(R9, Y9)
	ADDQ $22, R9
	ADDQ $32, BX
	ADDQ $4, R8
	DECQ CX
	JNZ  q50_block1

q50_store1:
	HSUM(Y9, X9, X0)
	VMOVSS X9, (R11)

q50_done:
	VZEROUPPER
	RET

// K4SCALES unpacks the 12 scale bytes at 4(SI) of a Q4_K/Q5_K block
// (get_scale_min_k4, done four at a time as ggml's utmp trick) into
// Y11 = the 8 scales as words, repeated in both lanes, and X5 = the 8 mins as
// words. Clobbers AX, R10-R14.
#define K4SCALES \
	MOVL        4(SI), AX; \
	MOVL        8(SI), R10; \
	MOVL        12(SI), R11; \
	MOVL        AX, R12; \
	ANDL        $0x3f3f3f3f, R12; \
	MOVL        R10, R13; \
	ANDL        $0x3f3f3f3f, R13; \
	MOVL        R11, R14; \
	ANDL        $0x0f0f0f0f, R14; \
	SHRL        $6, AX; \
	ANDL        $0x03030303, AX; \
	SHLL        $4, AX; \
	ORL         AX, R14; \
	SHRL        $4, R11; \
	ANDL        $0x0f0f0f0f, R11; \
	SHRL        $6, R10; \
	ANDL        $0x03030303, R10; \
	SHLL        $4, R10; \
	ORL         R10, R11; \
	SHLQ        $32, R14; \
	ORQ         R14, R12; \
	SHLQ        $32, R11; \
	ORQ         R11, R13; \
	VMOVQ       R12, X11; \
	VPMOVZXBW   X11, X11; \
	VINSERTI128 $1, X11, Y11, Y11; \
	VMOVQ       R13, X5; \
	VPMOVZXBW   X5, X5

// KDOT adds the scaled pair sums of low-nibble values Y0 (sub-block 2j, x at
// XOFF) and high-nibble values Y1 (sub-block 2j+1, x at XOFF+32) to Y10.
#define KDOT(XOFF, SOFF) \
	VPMADDUBSW XOFF(BX), Y0, Y0; \
	VPMADDUBSW XOFF+32(BX), Y1, Y1; \
	VPSHUFB    k4shuf<>+SOFF(SB), Y11, Y2; \
	VPSHUFB    k4shuf<>+SOFF+32(SB), Y11, Y3; \
	VPMADDWD   Y2, Y0, Y0; \
	VPMADDWD   Y3, Y1, Y1; \
	VPADDD     Y0, Y10, Y10; \
	VPADDD     Y1, Y10, Y10

// NIBBLES splits the 32 bytes at QOFF(SI) into low (Y0) and high (Y1) nibbles.
#define NIBBLES(QOFF) \
	VMOVDQU QOFF(SI), Y0; \
	VPSRLW  $4, Y0, Y1; \
	VPAND   Y15, Y0, Y0; \
	VPAND   Y15, Y1, Y1

// KFLOAT ends a Q4_K/Q5_K super-block: msum = Σ mins·(sub-block sums of x)
// from the sums at (R9), isum = Σ lanes of Y10; X13 += float(isum)·(d·xd),
// X12 += float(msum)·(dmin·xd), with d, dmin the halves at (SI).
#define KFLOAT \
	VMOVDQU      (R9), X6; \
	VMOVDQU      16(R9), X7; \
	VPHADDW      X7, X6, X6; \
	VPMADDWD     X6, X5, X5; \
	VPSHUFD      $0x4e, X5, X6; \
	VPADDD       X6, X5, X5; \
	VPSHUFD      $0xb1, X5, X6; \
	VPADDD       X6, X5, X5; \
	HSUMD(Y10, X10, X6); \
	VCVTDQ2PS    X10, X10; \
	VCVTDQ2PS    X5, X5; \
	VMOVD        (SI), X8; \
	VCVTPH2PS    X8, X8; \
	VBROADCASTSS (R8), X9; \
	VMULPS       X9, X8, X8; \
	VMULSS       X8, X10, X10; \
	VADDSS       X10, X13, X13; \
	VMOVSHDUP    X8, X8; \
	VMULSS       X8, X5, X5; \
	VADDSS       X5, X12, X12

// func q4KDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)
// out[r] = dot(Q4_K row r, Q8_K x) with nb super-blocks per row.
//
// Registers: SI block, BX x, R8 xd, R9 x sums, CX blocks left, DX rows
// left, DI out; Y15 0x0f, Y11 scales, X5 mins, Y10 int sums, X13 and X12
// the scale and min accumulators.
TEXT ·q4KDotsAVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ rows+40(FP), DX
	BYTES($0x0f0f0f0f, X15, Y15)

q4k_row:
	TESTQ  DX, DX
	JZ     q4k_done
	MOVQ   x+16(FP), BX
	MOVQ   xd+24(FP), R8
	MOVQ   xs+32(FP), R9
	MOVQ   nb+48(FP), CX
	VXORPS X13, X13, X13
	VXORPS X12, X12, X12
	TESTQ  CX, CX
	JZ     q4k_store

q4k_block:
	K4SCALES
	VPXOR Y10, Y10, Y10
	NIBBLES(16)
	KDOT(0, 0)
	NIBBLES(48)
	KDOT(64, 64)
	NIBBLES(80)
	KDOT(128, 128)
	NIBBLES(112)
	KDOT(192, 192)
	KFLOAT
	ADDQ  $144, SI
	ADDQ  $256, BX
	ADDQ  $4, R8
	ADDQ  $32, R9
	DECQ  CX
	JNZ   q4k_block

q4k_store:
	VSUBSS X12, X13, X13
	VMOVSS X13, (DI)
	ADDQ   $4, DI
	DECQ   DX
	JMP    q4k_row

q4k_done:
	VZEROUPPER
	RET

// Q5HIGH ors the fifth bits of the current sub-block pair into Y0 (bit 0 of
// Y7's bytes) and Y1 (bit 1), then moves the next pair's bits down.
#define Q5HIGH \
	VPAND  Y14, Y7, Y2; \
	VPSLLW $4, Y2, Y2; \
	VPOR   Y2, Y0, Y0; \
	VPAND  Y4, Y7, Y3; \
	VPSLLW $3, Y3, Y3; \
	VPOR   Y3, Y1, Y1; \
	VPSRLW $2, Y7, Y7

// func q5KDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)
// As q4KDotsAVX2 with the fifth bits from qh (Y7); Y14 = 1, Y4 = 2.
TEXT ·q5KDotsAVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ rows+40(FP), DX
	BYTES($0x0f0f0f0f, X15, Y15)
	BYTES($0x01010101, X14, Y14)
	BYTES($0x02020202, X4, Y4)

q5k_row:
	TESTQ  DX, DX
	JZ     q5k_done
	MOVQ   x+16(FP), BX
	MOVQ   xd+24(FP), R8
	MOVQ   xs+32(FP), R9
	MOVQ   nb+48(FP), CX
	VXORPS X13, X13, X13
	VXORPS X12, X12, X12
	TESTQ  CX, CX
	JZ     q5k_store

q5k_block:
	K4SCALES
	VPXOR   Y10, Y10, Y10
	VMOVDQU 16(SI), Y7
	NIBBLES(48)
	Q5HIGH
	KDOT(0, 0)
	NIBBLES(80)
	Q5HIGH
	KDOT(64, 64)
	NIBBLES(112)
	Q5HIGH
	KDOT(128, 128)
	NIBBLES(144)
	Q5HIGH
	KDOT(192, 192)
	KFLOAT
	ADDQ    $176, SI
	ADDQ    $256, BX
	ADDQ    $4, R8
	ADDQ    $32, R9
	DECQ    CX
	JNZ     q5k_block

q5k_store:
	VSUBSS X12, X13, X13
	VMOVSS X13, (DI)
	ADDQ   $4, DI
	DECQ   DX
	JMP    q5k_row

q5k_done:
	VZEROUPPER
	RET

// Q6CHUNK adds chunk c of a Q6_K half: values in Y0 (6 bits), x at XOFF(BX),
// scales for its two 16-value halves picked from Y11 by k6shuf entry c.
#define Q6CHUNK(XOFF, SOFF) \
	VPMADDUBSW XOFF(BX), Y0, Y0; \
	VPSHUFB    k6shuf<>+SOFF(SB), Y11, Y2; \
	VPMADDWD   Y2, Y0, Y0; \
	VPADDD     Y0, Y10, Y10

// Q6HALF does one 128-value half: ql at QL(SI) (64 bytes), qh at QH(SI) (32
// bytes), 8 scales at SC(SI), x at XO(BX). Value bits: chunk 0 = low nibbles
// of ql[0:32] | qh bits 0-1; chunk 1 = low nibbles of ql[32:64] | bits 2-3;
// chunks 2, 3 = the high nibbles | bits 4-5, 6-7 (dequantize_row_q6_K).
// Y14 = 0x30 picks the two high bits once shifted into place.
#define Q6HALF(QL, QH, SC, XO) \
	VPMOVSXBW   SC(SI), X11; \
	VINSERTI128 $1, X11, Y11, Y11; \
	VMOVDQU     QL(SI), Y7; \
	VMOVDQU     QL+32(SI), Y8; \
	VMOVDQU     QH(SI), Y9; \
	VPAND       Y15, Y7, Y0; \
	VPSLLW      $4, Y9, Y1; \
	VPAND       Y14, Y1, Y1; \
	VPOR        Y1, Y0, Y0; \
	Q6CHUNK(XO, 0); \
	VPAND       Y15, Y8, Y0; \
	VPSLLW      $2, Y9, Y1; \
	VPAND       Y14, Y1, Y1; \
	VPOR        Y1, Y0, Y0; \
	Q6CHUNK(XO+32, 32); \
	VPSRLW      $4, Y7, Y0; \
	VPAND       Y15, Y0, Y0; \
	VPAND       Y14, Y9, Y1; \
	VPOR        Y1, Y0, Y0; \
	Q6CHUNK(XO+64, 64); \
	VPSRLW      $4, Y8, Y0; \
	VPAND       Y15, Y0, Y0; \
	VPSRLW      $2, Y9, Y1; \
	VPAND       Y14, Y1, Y1; \
	VPOR        Y1, Y0, Y0; \
	Q6CHUNK(XO+96, 96)

// func q6KDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)
// out[r] = dot(Q6_K row r, Q8_K x). Values are 0..63 (unsigned for
// VPMADDUBSW); the -32 comes off once per super-block as 32·Σ scale·sums.
//
// Registers: as q4KDotsAVX2; Y14 0x30, Y11 the half's scales, X12 accumulator.
TEXT ·q6KDotsAVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ rows+40(FP), DX
	BYTES($0x0f0f0f0f, X15, Y15)
	BYTES($0x30303030, X14, Y14)

q6k_row:
	TESTQ  DX, DX
	JZ     q6k_done
	MOVQ   x+16(FP), BX
	MOVQ   xd+24(FP), R8
	MOVQ   xs+32(FP), R9
	MOVQ   nb+48(FP), CX
	VXORPS X12, X12, X12
	TESTQ  CX, CX
	JZ     q6k_store

q6k_block:
	VPMOVSXBW    192(SI), Y6
	VPMADDWD     (R9), Y6, Y6
	VPSLLD       $5, Y6, Y6
	VPXOR        Y10, Y10, Y10
	VPSUBD       Y6, Y10, Y10
	Q6HALF(0, 128, 192, 0)
	Q6HALF(64, 160, 200, 128)
	HSUMD(Y10, X10, X6)
	VCVTDQ2PS    X10, X10
	VPBROADCASTW 208(SI), X8
	VCVTPH2PS    X8, X8
	VBROADCASTSS (R8), X9
	VMULSS       X9, X8, X8
	VMULSS       X8, X10, X10
	VADDSS       X10, X12, X12
	ADDQ         $210, SI
	ADDQ         $256, BX
	ADDQ         $4, R8
	ADDQ         $32, R9
	DECQ         CX
	JNZ          q6k_block

q6k_store:
	VMOVSS X12, (DI)
	ADDQ   $4, DI
	DECQ   DX
	JMP    q6k_row

q6k_done:
	VZEROUPPER
	RET
