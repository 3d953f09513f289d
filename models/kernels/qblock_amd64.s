//go:build amd64 && !purego

#include "textflag.h"

// K-quant weights (GGUF layouts) × int8 activations, one row per loop. The
// integer work follows ggml's AVX2 kernels (ggml-cpu/arch/x86/quants.c,
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

// kvalues_iq4nl (gguf.IQ4NLValues) as int8 bytes, in both 128-bit lanes, for
// VPSHUFB to look the IQ4 nibbles up in.
DATA iq4nl<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4nl<>+8(SB)/8, $0x7159453526190d01
DATA iq4nl<>+16(SB)/8, $0xf6eaddcfbfad9881
DATA iq4nl<>+24(SB)/8, $0x7159453526190d01
GLOBL iq4nl<>(SB), RODATA|NOPTR, $32

// IQ4SUB adds one IQ4_XS sub-block's Σ (ls-32)·level·x to the int32 lanes of
// Y10: ls from the scales_l bits at LSH of R12 and the scales_h bits at HSH
// of R11; its 16 bytes of nibbles at QOFF(SI) become 32 levels (low nibbles
// then high, as the sub-block's values) and meet the 32 activations at
// XOFF(BX) as ggml's mul_sum_i8_pairs does (|x| unsigned × level·sign(x)).
// Clobbers AX, R13, Y0, Y1, Y4.
#define IQ4SUB(QOFF, XOFF, LSH, HSH) \
	MOVL         R12, AX; \
	SHRL         $LSH, AX; \
	ANDL         $15, AX; \
	MOVL         R11, R13; \
	SHRL         $HSH, R13; \
	ANDL         $3, R13; \
	SHLL         $4, R13; \
	ORL          R13, AX; \
	SUBL         $32, AX; \
	VMOVD        AX, X4; \
	VPBROADCASTW X4, Y4; \
	VMOVDQU      QOFF(SI), X0; \
	VPSRLW       $4, X0, X1; \
	VINSERTI128  $1, X1, Y0, Y0; \
	VPAND        Y15, Y0, Y0; \
	VPSHUFB      Y0, Y14, Y0; \
	VMOVDQU      XOFF(BX), Y1; \
	VPSIGNB      Y1, Y0, Y0; \
	VPSIGNB      Y1, Y1, Y1; \
	VPMADDUBSW   Y0, Y1, Y1; \
	VPMADDWD     Y4, Y1, Y1; \
	VPADDD       Y1, Y10, Y10

// func iq4xsDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)
// out[r] = dot(IQ4_XS row r, Q8_K x) with nb super-blocks per row: the
// exact int32 sum of a super-block, then X13 += float(isum)·(d·xd), as
// dotIQ4XSGo. The sums xs are not read.
//
// Registers: SI block, BX x, R8 xd, CX blocks left, DX rows left, DI out,
// R11 scales_h, R12 scales_l; Y15 0x0f, Y14 the levels, Y10 int sums, X13
// the accumulator.
TEXT ·iq4xsDotsAVX2(SB), NOSPLIT, $0-56
	MOVQ    out+0(FP), DI
	MOVQ    w+8(FP), SI
	MOVQ    rows+40(FP), DX
	BYTES($0x0f0f0f0f, X15, Y15)
	VMOVDQU iq4nl<>(SB), Y14

iq4xs_row:
	TESTQ  DX, DX
	JZ     iq4xs_done
	MOVQ   x+16(FP), BX
	MOVQ   xd+24(FP), R8
	MOVQ   nb+48(FP), CX
	VXORPS X13, X13, X13
	TESTQ  CX, CX
	JZ     iq4xs_store

iq4xs_block:
	MOVWLZX 2(SI), R11
	MOVL    4(SI), R12
	VPXOR   Y10, Y10, Y10
	IQ4SUB(8, 0, 0, 0)
	IQ4SUB(24, 32, 4, 2)
	IQ4SUB(40, 64, 8, 4)
	IQ4SUB(56, 96, 12, 6)
	IQ4SUB(72, 128, 16, 8)
	IQ4SUB(88, 160, 20, 10)
	IQ4SUB(104, 192, 24, 12)
	IQ4SUB(120, 224, 28, 14)
	HSUMD(Y10, X10, X6)
	VCVTDQ2PS X10, X10
	VMOVD     (SI), X8
	VCVTPH2PS X8, X8
	VMULSS    (R8), X8, X8
	VMULSS    X8, X10, X10
	VADDSS    X10, X13, X13
	ADDQ      $136, SI
	ADDQ      $256, BX
	ADDQ      $4, R8
	DECQ      CX
	JNZ       iq4xs_block

iq4xs_store:
	VMOVSS X13, (DI)
	ADDQ   $4, DI
	DECQ   DX
	JMP    iq4xs_row

iq4xs_done:
	VZEROUPPER
	RET
