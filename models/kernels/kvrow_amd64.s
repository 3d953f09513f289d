//go:build amd64 && !purego

#include "textflag.h"

// The encoders' shared constants, 8 copies each (a ymm).
// |x|'s mask
DATA kvabs<>+0(SB)/8, $0x7fffffff7fffffff
DATA kvabs<>+8(SB)/8, $0x7fffffff7fffffff
DATA kvabs<>+16(SB)/8, $0x7fffffff7fffffff
DATA kvabs<>+24(SB)/8, $0x7fffffff7fffffff
GLOBL kvabs<>(SB), RODATA|NOPTR, $32
// 1.5·2^23: adding and taking it away rounds a float32 to an integer, ties to even
DATA kvrnd<>+0(SB)/8, $0x4b4000004b400000
DATA kvrnd<>+8(SB)/8, $0x4b4000004b400000
DATA kvrnd<>+16(SB)/8, $0x4b4000004b400000
DATA kvrnd<>+24(SB)/8, $0x4b4000004b400000
GLOBL kvrnd<>(SB), RODATA|NOPTR, $32

// func absMaxAVX2(x *float32, n int) (amax float32, nan bool)
// n is a multiple of 16 (> 0). The max of |x[i]|, and whether any x[i] is
// a NaN (VMAXPS does not carry NaNs through, so an unordered compare does).
TEXT ·absMaxAVX2(SB), NOSPLIT, $0-21
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VMOVDQU      kvabs<>(SB), Y15
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
	VMOVDQU      kvrnd<>(SB), Y14
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


// E4M3 encoding's constants, 8 copies each (a ymm).
// the sign bit
DATA e4m3sign<>+0(SB)/8, $0x8000000080000000
DATA e4m3sign<>+8(SB)/8, $0x8000000080000000
DATA e4m3sign<>+16(SB)/8, $0x8000000080000000
DATA e4m3sign<>+24(SB)/8, $0x8000000080000000
GLOBL e4m3sign<>(SB), RODATA|NOPTR, $32
// 448, the largest E4M3 value
DATA e4m3max<>+0(SB)/8, $0x43e0000043e00000
DATA e4m3max<>+8(SB)/8, $0x43e0000043e00000
DATA e4m3max<>+16(SB)/8, $0x43e0000043e00000
DATA e4m3max<>+24(SB)/8, $0x43e0000043e00000
GLOBL e4m3max<>(SB), RODATA|NOPTR, $32
// 2^-6, the smallest normal
DATA e4m3min<>+0(SB)/8, $0x3c8000003c800000
DATA e4m3min<>+8(SB)/8, $0x3c8000003c800000
DATA e4m3min<>+16(SB)/8, $0x3c8000003c800000
DATA e4m3min<>+24(SB)/8, $0x3c8000003c800000
GLOBL e4m3min<>(SB), RODATA|NOPTR, $32
// 512: 2^-9 steps below it
DATA e4m3sub<>+0(SB)/8, $0x4400000044000000
DATA e4m3sub<>+8(SB)/8, $0x4400000044000000
DATA e4m3sub<>+16(SB)/8, $0x4400000044000000
DATA e4m3sub<>+24(SB)/8, $0x4400000044000000
GLOBL e4m3sub<>(SB), RODATA|NOPTR, $32
// 1
DATA e4m3one<>+0(SB)/8, $0x100000001
DATA e4m3one<>+8(SB)/8, $0x100000001
DATA e4m3one<>+16(SB)/8, $0x100000001
DATA e4m3one<>+24(SB)/8, $0x100000001
GLOBL e4m3one<>(SB), RODATA|NOPTR, $32
// half an E4M3 step of a float32 mantissa, less one
DATA e4m3half<>+0(SB)/8, $0x7ffff0007ffff
DATA e4m3half<>+8(SB)/8, $0x7ffff0007ffff
DATA e4m3half<>+16(SB)/8, $0x7ffff0007ffff
DATA e4m3half<>+24(SB)/8, $0x7ffff0007ffff
GLOBL e4m3half<>(SB), RODATA|NOPTR, $32
// (127-7)<<3, the exponents' bias difference
DATA e4m3bias<>+0(SB)/8, $0x3c0000003c0
DATA e4m3bias<>+8(SB)/8, $0x3c0000003c0
DATA e4m3bias<>+16(SB)/8, $0x3c0000003c0
DATA e4m3bias<>+24(SB)/8, $0x3c0000003c0
GLOBL e4m3bias<>(SB), RODATA|NOPTR, $32
// the code of 448
DATA e4m3top<>+0(SB)/8, $0x7e0000007e
DATA e4m3top<>+8(SB)/8, $0x7e0000007e
DATA e4m3top<>+16(SB)/8, $0x7e0000007e
DATA e4m3top<>+24(SB)/8, $0x7e0000007e
GLOBL e4m3top<>(SB), RODATA|NOPTR, $32
// the NaN code
DATA e4m3nan<>+0(SB)/8, $0x7f0000007f
DATA e4m3nan<>+8(SB)/8, $0x7f0000007f
DATA e4m3nan<>+16(SB)/8, $0x7f0000007f
DATA e4m3nan<>+24(SB)/8, $0x7f0000007f
GLOBL e4m3nan<>(SB), RODATA|NOPTR, $32

// func divEncodeE4M3AVX2(q *uint8, x *float32, s float32, n int)
// n is a multiple of 8. quant.EncodeFP8(x/s, E4M3) of each value, on its
// bits: a = |x/s|; below 2^-6 the code is a·2^9 rounded to even (adding
// and taking away 1.5·2^23); else a's mantissa rounded half to even to 3
// bits (the carry moving the exponent), the exponent rebiased; 0x7E at 448
// and over; the sign on top; a NaN gives 0x7F. Packed to bytes in order.
TEXT ·divEncodeE4M3AVX2(SB), NOSPLIT, $0-32
	MOVQ         q+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS s+16(FP), Y5
	MOVQ         n+24(FP), CX
	XORQ         AX, AX

e4m3_loop:
	VMOVUPS      (SI)(AX*4), Y0
	VDIVPS       Y5, Y0, Y0
	VCMPPS       $3, Y0, Y0, Y4             // NaN
	VANDPS       e4m3sign<>(SB), Y0, Y1
	VPSRLD       $24, Y1, Y1                // the sign, 0x80 or 0
	VANDPS       kvabs<>(SB), Y0, Y2      // a
	VCMPPS       $13, e4m3max<>(SB), Y2, Y3 // a >= 448
	VCMPPS       $1, e4m3min<>(SB), Y2, Y6  // a < 2^-6
	VMULPS       e4m3sub<>(SB), Y2, Y7
	VADDPS       kvrnd<>(SB), Y7, Y7
	VSUBPS       kvrnd<>(SB), Y7, Y7
	VCVTTPS2DQ   Y7, Y7                     // a subnormal's code
	VPSRLD       $20, Y2, Y8
	VPAND        e4m3one<>(SB), Y8, Y8
	VPADDD       Y8, Y2, Y8
	VPADDD       e4m3half<>(SB), Y8, Y8
	VPSRLD       $20, Y8, Y8
	VPSUBD       e4m3bias<>(SB), Y8, Y8     // a normal's code
	VBLENDVPS    Y6, Y7, Y8, Y8
	VBLENDVPS    Y3, e4m3top<>(SB), Y8, Y8
	VPOR         Y1, Y8, Y8
	VBLENDVPS    Y4, e4m3nan<>(SB), Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPACKSSDW    X9, X8, X8                 // the 8 as int16, in order
	VPACKUSWB    X8, X8, X8
	VMOVQ        X8, (DI)(AX*1)
	ADDQ         $8, AX
	CMPQ         AX, CX
	JLT          e4m3_loop
	VZEROUPPER
	RET
// VPERMD's order for four packs' dwords
DATA i4perm<>+0(SB)/8, $0x400000000
DATA i4perm<>+8(SB)/8, $0x500000001
DATA i4perm<>+16(SB)/8, $0x600000002
DATA i4perm<>+24(SB)/8, $0x700000003
GLOBL i4perm<>(SB), RODATA|NOPTR, $32
// the low byte of each word
DATA i4low<>+0(SB)/8, $0xff00ff00ff00ff
DATA i4low<>+8(SB)/8, $0xff00ff00ff00ff
DATA i4low<>+16(SB)/8, $0xff00ff00ff00ff
DATA i4low<>+24(SB)/8, $0xff00ff00ff00ff
GLOBL i4low<>(SB), RODATA|NOPTR, $32

// func divRoundInt4AVX2(packed *byte, x *float32, s float32, n int)
// n is a multiple of 32. Per 32 values: x/s rounded to even (adding and
// taking away 1.5·2^23), clamped to ±7, plus 8; packed to 32 bytes in
// order (two packs, then VPERMD), then each pair of bytes to one, the
// second value's code in the high nibble.
TEXT ·divRoundInt4AVX2(SB), NOSPLIT, $0-32
	MOVQ         packed+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS s+16(FP), Y15
	MOVQ         n+24(FP), CX
	VMOVDQU      kvrnd<>(SB), Y14
	MOVL         $0xc0e00000, AX // -7
	MOVL         AX, X13
	VBROADCASTSS X13, Y13
	MOVL         $0x40e00000, AX // 7
	MOVL         AX, X12
	VBROADCASTSS X12, Y12
	MOVL         $8, AX
	MOVL         AX, X11
	VPBROADCASTD X11, Y11
	VMOVDQU      i4perm<>(SB), Y10
	VMOVDQU      i4low<>(SB), Y9
	XORQ         AX, AX

int4_loop:
	VMOVUPS      0(SI)(AX*4), Y0
	VDIVPS       Y15, Y0, Y0
	VADDPS       Y14, Y0, Y0
	VSUBPS       Y14, Y0, Y0
	VMAXPS       Y13, Y0, Y0
	VMINPS       Y12, Y0, Y0
	VCVTTPS2DQ   Y0, Y0
	VPADDD       Y11, Y0, Y0
	VMOVUPS      32(SI)(AX*4), Y1
	VDIVPS       Y15, Y1, Y1
	VADDPS       Y14, Y1, Y1
	VSUBPS       Y14, Y1, Y1
	VMAXPS       Y13, Y1, Y1
	VMINPS       Y12, Y1, Y1
	VCVTTPS2DQ   Y1, Y1
	VPADDD       Y11, Y1, Y1
	VMOVUPS      64(SI)(AX*4), Y2
	VDIVPS       Y15, Y2, Y2
	VADDPS       Y14, Y2, Y2
	VSUBPS       Y14, Y2, Y2
	VMAXPS       Y13, Y2, Y2
	VMINPS       Y12, Y2, Y2
	VCVTTPS2DQ   Y2, Y2
	VPADDD       Y11, Y2, Y2
	VMOVUPS      96(SI)(AX*4), Y3
	VDIVPS       Y15, Y3, Y3
	VADDPS       Y14, Y3, Y3
	VSUBPS       Y14, Y3, Y3
	VMAXPS       Y13, Y3, Y3
	VMINPS       Y12, Y3, Y3
	VCVTTPS2DQ   Y3, Y3
	VPADDD       Y11, Y3, Y3
	VPACKSSDW    Y1, Y0, Y0     // words, per 128-bit lane: 4 of values 0-7, 4 of 8-15
	VPACKSSDW    Y3, Y2, Y2     // and of 16-23, 24-31
	VPACKUSWB    Y2, Y0, Y0     // bytes: dwords 0-3 a lane's four quarters
	VPERMD       Y0, Y10, Y0    // the 32 codes in order
	VPSRLW       $4, Y0, Y1
	VPOR         Y1, Y0, Y0     // each word's low byte: its first code | its second << 4
	VPAND        Y9, Y0, Y0
	VPACKUSWB    Y0, Y0, Y0
	VPERMQ       $0x08, Y0, Y0  // the 16 bytes in order
	VMOVDQU      X0, (DI)
	ADDQ         $16, DI
	ADDQ         $32, AX
	CMPQ         AX, CX
	JLT          int4_loop
	VZEROUPPER
	RET
