//go:build amd64 && !purego

#include "textflag.h"

// Vectorised e^x, 8 lanes: the same float32 operations in the same order as
// exp32 in exp.go (no FMA), so both give the same bits. Constants are
// 8-lane vectors at expc<>+32k.
// lo = -104
DATA expc<>+0(SB)/8, $0xc2d00000c2d00000
DATA expc<>+8(SB)/8, $0xc2d00000c2d00000
DATA expc<>+16(SB)/8, $0xc2d00000c2d00000
DATA expc<>+24(SB)/8, $0xc2d00000c2d00000
// hi = 88.8
DATA expc<>+32(SB)/8, $0x42b1999a42b1999a
DATA expc<>+40(SB)/8, $0x42b1999a42b1999a
DATA expc<>+48(SB)/8, $0x42b1999a42b1999a
DATA expc<>+56(SB)/8, $0x42b1999a42b1999a
// log2e = 1.442695
DATA expc<>+64(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expc<>+72(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expc<>+80(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expc<>+88(SB)/8, $0x3fb8aa3b3fb8aa3b
// C1 = 0.6933594
DATA expc<>+96(SB)/8, $0x3f3180003f318000
DATA expc<>+104(SB)/8, $0x3f3180003f318000
DATA expc<>+112(SB)/8, $0x3f3180003f318000
DATA expc<>+120(SB)/8, $0x3f3180003f318000
// C2 = -0.00021219444
DATA expc<>+128(SB)/8, $0xb95e8083b95e8083
DATA expc<>+136(SB)/8, $0xb95e8083b95e8083
DATA expc<>+144(SB)/8, $0xb95e8083b95e8083
DATA expc<>+152(SB)/8, $0xb95e8083b95e8083
// P0 = 0.00019875691
DATA expc<>+160(SB)/8, $0x3950696739506967
DATA expc<>+168(SB)/8, $0x3950696739506967
DATA expc<>+176(SB)/8, $0x3950696739506967
DATA expc<>+184(SB)/8, $0x3950696739506967
// P1 = 0.0013981999
DATA expc<>+192(SB)/8, $0x3ab743ce3ab743ce
DATA expc<>+200(SB)/8, $0x3ab743ce3ab743ce
DATA expc<>+208(SB)/8, $0x3ab743ce3ab743ce
DATA expc<>+216(SB)/8, $0x3ab743ce3ab743ce
// P2 = 0.008333452
DATA expc<>+224(SB)/8, $0x3c0889083c088908
DATA expc<>+232(SB)/8, $0x3c0889083c088908
DATA expc<>+240(SB)/8, $0x3c0889083c088908
DATA expc<>+248(SB)/8, $0x3c0889083c088908
// P3 = 0.041665796
DATA expc<>+256(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expc<>+264(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expc<>+272(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expc<>+280(SB)/8, $0x3d2aa9c13d2aa9c1
// P4 = 0.16666666
DATA expc<>+288(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expc<>+296(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expc<>+304(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expc<>+312(SB)/8, $0x3e2aaaaa3e2aaaaa
// P5 = 0.5
DATA expc<>+320(SB)/8, $0x3f0000003f000000
DATA expc<>+328(SB)/8, $0x3f0000003f000000
DATA expc<>+336(SB)/8, $0x3f0000003f000000
DATA expc<>+344(SB)/8, $0x3f0000003f000000
// one = 1
DATA expc<>+352(SB)/8, $0x3f8000003f800000
DATA expc<>+360(SB)/8, $0x3f8000003f800000
DATA expc<>+368(SB)/8, $0x3f8000003f800000
DATA expc<>+376(SB)/8, $0x3f8000003f800000
// int32 127 (exponent bias)
DATA expc<>+384(SB)/8, $0x0000007f0000007f
DATA expc<>+392(SB)/8, $0x0000007f0000007f
DATA expc<>+400(SB)/8, $0x0000007f0000007f
DATA expc<>+408(SB)/8, $0x0000007f0000007f
GLOBL expc<>(SB), RODATA|NOPTR, $416

// tailmask<>: 8 all-ones lanes then 8 zero lanes; the 8 lanes from lane 8-k
// mask the first k lanes (as in kernels_amd64.s).
DATA tailmask<>+0(SB)/8, $0xffffffffffffffff
DATA tailmask<>+8(SB)/8, $0xffffffffffffffff
DATA tailmask<>+16(SB)/8, $0xffffffffffffffff
DATA tailmask<>+24(SB)/8, $0xffffffffffffffff
DATA tailmask<>+32(SB)/8, $0
DATA tailmask<>+40(SB)/8, $0
DATA tailmask<>+48(SB)/8, $0
DATA tailmask<>+56(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// MASK sets Y10 to the mask of the first k lanes, k = CX (1..7; clobbered).
#define MASK \
	LEAQ    tailmask<>+32(SB), R8; \
	SHLQ    $2, CX; \
	SUBQ    CX, R8; \
	VMOVDQU (R8), Y10

// EXP8 sets Y0 = e^Y0 with Y15 = lo, Y14 = hi; clobbers Y1-Y3. The clamps
// take x as their second source so a NaN passes through.
#define EXP8 \
	VMAXPS    Y0, Y15, Y0; \
	VMINPS    Y0, Y14, Y0; \
	VMULPS    expc<>+64(SB), Y0, Y1; \
	VROUNDPS  $0, Y1, Y1; \
	VMULPS    expc<>+96(SB), Y1, Y2; \
	VSUBPS    Y2, Y0, Y0; \
	VMULPS    expc<>+128(SB), Y1, Y2; \
	VSUBPS    Y2, Y0, Y0; \
	VCVTPS2DQ Y1, Y1; \
	VMULPS    Y0, Y0, Y2; \
	VMULPS    expc<>+160(SB), Y0, Y3; \
	VADDPS    expc<>+192(SB), Y3, Y3; \
	VMULPS    Y0, Y3, Y3; \
	VADDPS    expc<>+224(SB), Y3, Y3; \
	VMULPS    Y0, Y3, Y3; \
	VADDPS    expc<>+256(SB), Y3, Y3; \
	VMULPS    Y0, Y3, Y3; \
	VADDPS    expc<>+288(SB), Y3, Y3; \
	VMULPS    Y0, Y3, Y3; \
	VADDPS    expc<>+320(SB), Y3, Y3; \
	VMULPS    Y2, Y3, Y3; \
	VADDPS    Y0, Y3, Y3; \
	VADDPS    expc<>+352(SB), Y3, Y3; \
	VPSRAD    $1, Y1, Y2; \
	VPSUBD    Y2, Y1, Y1; \
	VPADDD    expc<>+384(SB), Y2, Y2; \
	VPSLLD    $23, Y2, Y2; \
	VMULPS    Y2, Y3, Y3; \
	VPADDD    expc<>+384(SB), Y1, Y1; \
	VPSLLD    $23, Y1, Y1; \
	VMULPS    Y1, Y3, Y0

// func softmaxExpAVX2(x *float32, n int, m float32) float32
// x[i] = e^(x[i]-m); returns Σ x[i] accumulated in 8 lanes (element i in lane
// i%8, masked-off tail lanes add 0), reduced as hsum8.
TEXT ·softmaxExpAVX2(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS m+16(FP), Y9
	VMOVUPS      expc<>+0(SB), Y15
	VMOVUPS      expc<>+32(SB), Y14
	VXORPS       Y8, Y8, Y8
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-8, DX
	JZ           sm_tail

sm_loop:
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS  Y9, Y0, Y0
	EXP8
	VMOVUPS Y0, (SI)(AX*4)
	VADDPS  Y0, Y8, Y8
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     sm_loop

sm_tail:
	ANDQ       $7, CX
	JZ         sm_sum
	MASK
	VMASKMOVPS (SI)(AX*4), Y10, Y0
	VSUBPS     Y9, Y0, Y0
	EXP8
	VANDPS     Y10, Y0, Y0
	VMASKMOVPS Y0, Y10, (SI)(AX*4)
	VADDPS     Y0, Y8, Y8

sm_sum:
	VEXTRACTF128 $1, Y8, X0
	VADDPS       X0, X8, X8
	VMOVHLPS     X8, X8, X0
	VADDPS       X0, X8, X8
	VMOVSHDUP    X8, X0
	VADDSS       X0, X8, X8
	VMOVSS       X8, ret+24(FP)
	VZEROUPPER
	RET

// func swigluAVX2(gate, up *float32, n int)
// gate[i] = (g / (1 + e^-g)) · up[i], g = gate[i]: the steps of SwiGLU's Go
// loop, so the same bits. Y13 = -0.0 flips signs; Y12 = 1.
TEXT ·swigluAVX2(SB), NOSPLIT, $0-24
	MOVQ         gate+0(FP), DI
	MOVQ         up+8(FP), SI
	MOVQ         n+16(FP), CX
	VMOVUPS      expc<>+0(SB), Y15
	VMOVUPS      expc<>+32(SB), Y14
	VMOVUPS      expc<>+352(SB), Y12
	MOVL         $0x80000000, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-8, DX
	JZ           sw_tail

sw_loop:
	VMOVUPS (DI)(AX*4), Y4
	VXORPS  Y13, Y4, Y0
	EXP8
	VADDPS  Y12, Y0, Y0
	VDIVPS  Y0, Y4, Y4
	VMULPS  (SI)(AX*4), Y4, Y4
	VMOVUPS Y4, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     sw_loop

sw_tail:
	ANDQ       $7, CX
	JZ         sw_done
	MASK
	VMASKMOVPS (DI)(AX*4), Y10, Y4
	VMASKMOVPS (SI)(AX*4), Y10, Y5
	VXORPS     Y13, Y4, Y0
	EXP8
	VADDPS     Y12, Y0, Y0
	VDIVPS     Y0, Y4, Y4
	VMULPS     Y5, Y4, Y4
	VMASKMOVPS Y4, Y10, (DI)(AX*4)

sw_done:
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
// The largest element other than NaN (n >= 1; -Inf when every one is NaN);
// masked-off tail lanes count as -Inf. VMAXPS returns its second source
// when either is NaN, and the running maxima are that source.
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVL         $0xff800000, AX
	VMOVD        AX, X11
	VPBROADCASTD X11, Y11
	VMOVUPS      Y11, Y8
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-8, DX
	JZ           mx_tail

mx_loop:
	VMOVUPS (SI)(AX*4), Y0
	VMAXPS  Y8, Y0, Y8
	ADDQ    $8, AX
	CMPQ   AX, DX
	JLT    mx_loop

mx_tail:
	ANDQ       $7, CX
	JZ         mx_reduce
	MASK
	VMASKMOVPS (SI)(AX*4), Y10, Y0
	VBLENDVPS  Y10, Y0, Y11, Y0
	VMAXPS     Y8, Y0, Y8

mx_reduce:
	VEXTRACTF128 $1, Y8, X0
	VMAXPS       X0, X8, X8
	VMOVHLPS     X8, X8, X0
	VMAXPS       X0, X8, X8
	VMOVSHDUP    X8, X0
	VMAXSS       X0, X8, X8
	VMOVSS       X8, ret+16(FP)
	VZEROUPPER
	RET

// func scaleAVX2(x *float32, n int, s float32)
// x[i] *= s.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS s+16(FP), Y9
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-8, DX
	JZ           sc_tail

sc_loop:
	VMULPS  (SI)(AX*4), Y9, Y0
	VMOVUPS Y0, (SI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     sc_loop

sc_tail:
	ANDQ       $7, CX
	JZ         sc_done
	MASK
	VMASKMOVPS (SI)(AX*4), Y10, Y0
	VMULPS     Y9, Y0, Y0
	VMASKMOVPS Y0, Y10, (SI)(AX*4)

sc_done:
	VZEROUPPER
	RET

// func scaleMulAVX2(out, x, w *float32, n int, s float32)
// out[i] = (x[i]·s)·w[i], each product rounded (VMULPS twice): ScaleMul's
// Go loop's bits.
TEXT ·scaleMulAVX2(SB), NOSPLIT, $0-36
	MOVQ         out+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), BX
	MOVQ         n+24(FP), CX
	VBROADCASTSS s+32(FP), Y9
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-8, DX
	JZ           sm_tail

sm_loop:
	VMULPS  (SI)(AX*4), Y9, Y0
	VMULPS  (BX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     sm_loop

sm_tail:
	ANDQ       $7, CX
	JZ         sm_done
	MASK
	VMASKMOVPS (SI)(AX*4), Y10, Y0
	VMASKMOVPS (BX)(AX*4), Y10, Y1
	VMULPS     Y9, Y0, Y0
	VMULPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y10, (DI)(AX*4)

sm_done:
	VZEROUPPER
	RET

// func ropePairsAVX2(x, c, s *float32, n int)
// Rotates n pairs (x[2i], x[2i+1]) by (c[i], s[i]), n a multiple of 4:
// x[2i] = a·c - b·s, x[2i+1] = a·s + b·c, each product rounded before the
// sum (VMULPS, then VADDSUBPS), as Rope.Apply's Go loop computes them.
TEXT ·ropePairsAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), DI
	MOVQ c+8(FP), SI
	MOVQ s+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $2, CX
	JZ   rp_done

rp_loop:
	VMOVUPS     (DI), Y0         // a0 b0 a1 b1 a2 b2 a3 b3
	VMOVUPS     (SI), X1         // c0..c3
	VMOVUPS     (DX), X2         // s0..s3
	VUNPCKLPS   X1, X1, X3       // c0 c0 c1 c1
	VUNPCKHPS   X1, X1, X4       // c2 c2 c3 c3
	VINSERTF128 $1, X4, Y3, Y3
	VUNPCKLPS   X2, X2, X5
	VUNPCKHPS   X2, X2, X6
	VINSERTF128 $1, X6, Y5, Y5
	VPERMILPS   $0xB1, Y0, Y7    // b0 a0 b1 a1 ...
	VMULPS      Y3, Y0, Y0       // a·c, b·c
	VMULPS      Y5, Y7, Y7       // b·s, a·s
	VADDSUBPS   Y7, Y0, Y0       // a·c - b·s, b·c + a·s
	VMOVUPS     Y0, (DI)
	ADDQ        $32, DI
	ADDQ        $16, SI
	ADDQ        $16, DX
	DECQ        CX
	JNZ         rp_loop

rp_done:
	VZEROUPPER
	RET

// func ropeHalvesAVX2(x1, x2, c, s *float32, n int)
// Rotates (x1[i], x2[i]) by (c[i], s[i]) for i < n, n a multiple of 8 (the
// NeoX layout): x1[i] = a·c - b·s, x2[i] = a·s + b·c, each product rounded.
TEXT ·ropeHalvesAVX2(SB), NOSPLIT, $0-40
	MOVQ x1+0(FP), DI
	MOVQ x2+8(FP), BX
	MOVQ c+16(FP), SI
	MOVQ s+24(FP), DX
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ   rh_done

rh_loop:
	VMOVUPS (DI), Y0
	VMOVUPS (BX), Y1
	VMOVUPS (SI), Y2
	VMOVUPS (DX), Y3
	VMULPS  Y2, Y0, Y4 // a·c
	VMULPS  Y3, Y1, Y5 // b·s
	VSUBPS  Y5, Y4, Y4
	VMULPS  Y3, Y0, Y6 // a·s
	VMULPS  Y2, Y1, Y7 // b·c
	VADDPS  Y7, Y6, Y6
	VMOVUPS Y4, (DI)
	VMOVUPS Y6, (BX)
	ADDQ    $32, DI
	ADDQ    $32, BX
	ADDQ    $32, SI
	ADDQ    $32, DX
	DECQ    CX
	JNZ     rh_loop

rh_done:
	VZEROUPPER
	RET
