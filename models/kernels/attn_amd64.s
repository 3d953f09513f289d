//go:build amd64 && !purego

#include "textflag.h"

// func attnScoresAVX2(scores, q, k *float32, d, stride, n int, scale float32)
// d is a multiple of 8. For each of the n key rows (stride floats apart):
// one 8-lane FMA accumulator over the row, a horizontal sum, times scale.
// Eight, then four rows at a time: independent accumulators share each
// load of q, so the FMA latency of one row's chain hides behind the others;
// each row's sum is the same chain and reduction as in the one-row loop
// that takes the rest. The eight-row block reduces its eight accumulators
// together (transposed), in HSUM's order for each: a_i = l_i+l_(i+4), then
// (a0+a2)+(a1+a3).
TEXT ·attnScoresAVX2(SB), NOSPLIT, $0-52
	MOVQ scores+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), BX
	MOVQ d+24(FP), CX
	MOVQ stride+32(FP), R8
	SHLQ $2, R8              // stride in bytes
	MOVQ n+40(FP), R9
	VMOVSS scale+48(FP), X5
	VBROADCASTSS X5, Y15
	XORQ R10, R10            // t
	LEAQ (R8)(R8*2), R13     // 3·stride

s8_rows:
	LEAQ 8(R10), R11
	CMPQ R11, R9
	JGT  s8_done             // fewer than 8 rows left
	MOVQ BX, R12             // row t, walking
	LEAQ (BX)(R13*1), DX     // row t+3, walking
	MOVQ SI, R14             // q, walking
	MOVQ CX, AX              // columns left
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

s8_col:
	VMOVUPS     (R14), Y8
	VFMADD231PS (R12), Y8, Y0
	VFMADD231PS (R12)(R8*1), Y8, Y1
	VFMADD231PS (R12)(R8*2), Y8, Y2
	VFMADD231PS (DX), Y8, Y3
	VFMADD231PS (R12)(R8*4), Y8, Y4
	VFMADD231PS (DX)(R8*2), Y8, Y5
	VFMADD231PS (DX)(R13*1), Y8, Y6
	VFMADD231PS (DX)(R8*4), Y8, Y7
	ADDQ        $32, R14
	ADDQ        $32, R12
	ADDQ        $32, DX
	SUBQ        $8, AX
	JNZ         s8_col

	// a: rows r and r+4 side by side, lo + hi halves.
	VPERM2F128 $0x20, Y4, Y0, Y9
	VPERM2F128 $0x31, Y4, Y0, Y10
	VADDPS     Y10, Y9, Y9       // [a(t) | a(t+4)]
	VPERM2F128 $0x20, Y5, Y1, Y10
	VPERM2F128 $0x31, Y5, Y1, Y11
	VADDPS     Y11, Y10, Y10     // [a(t+1) | a(t+5)]
	VPERM2F128 $0x20, Y6, Y2, Y11
	VPERM2F128 $0x31, Y6, Y2, Y12
	VADDPS     Y12, Y11, Y11     // [a(t+2) | a(t+6)]
	VPERM2F128 $0x20, Y7, Y3, Y12
	VPERM2F128 $0x31, Y7, Y3, Y13
	VADDPS     Y13, Y12, Y12     // [a(t+3) | a(t+7)]
	// b0 = a0+a2, b1 = a1+a3.
	VSHUFPS $0x44, Y10, Y9, Y13
	VSHUFPS $0xee, Y10, Y9, Y14
	VADDPS  Y14, Y13, Y9         // [b(t) b(t+1) | b(t+4) b(t+5)]
	VSHUFPS $0x44, Y12, Y11, Y13
	VSHUFPS $0xee, Y12, Y11, Y14
	VADDPS  Y14, Y13, Y10        // [b(t+2) b(t+3) | b(t+6) b(t+7)]
	// b0 + b1, rows t..t+7 in order.
	VSHUFPS $0x88, Y10, Y9, Y11
	VSHUFPS $0xdd, Y10, Y9, Y12
	VADDPS  Y12, Y11, Y11
	VMULPS  Y15, Y11, Y11
	VMOVUPS Y11, (DI)(R10*4)

	LEAQ (BX)(R8*8), BX      // row t+8
	MOVQ R11, R10
	JMP  s8_rows

s8_done:
	VMOVAPS X15, X5          // the scale again (Y5 was an accumulator)

s4_rows:
	LEAQ 4(R10), R11
	CMPQ R11, R9
	JGT  s1_check            // fewer than 4 rows left
	LEAQ (BX)(R8*1), DX      // row t+1
	LEAQ (DX)(R8*1), R12     // row t+2
	LEAQ (R12)(R8*1), R13    // row t+3
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX

s4_col:
	VMOVUPS     (SI)(AX*4), Y4
	VFMADD231PS (BX)(AX*4), Y4, Y0
	VFMADD231PS (DX)(AX*4), Y4, Y1
	VFMADD231PS (R12)(AX*4), Y4, Y2
	VFMADD231PS (R13)(AX*4), Y4, Y3
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         s4_col

	VEXTRACTF128 $1, Y0, X6
	VADDPS       X6, X0, X0
	VMOVHLPS     X0, X0, X6
	VADDPS       X6, X0, X0
	VMOVSHDUP    X0, X6
	VADDSS       X6, X0, X0
	VMULSS       X5, X0, X0
	VMOVSS       X0, (DI)(R10*4)

	VEXTRACTF128 $1, Y1, X6
	VADDPS       X6, X1, X1
	VMOVHLPS     X1, X1, X6
	VADDPS       X6, X1, X1
	VMOVSHDUP    X1, X6
	VADDSS       X6, X1, X1
	VMULSS       X5, X1, X1
	VMOVSS       X1, 4(DI)(R10*4)

	VEXTRACTF128 $1, Y2, X6
	VADDPS       X6, X2, X2
	VMOVHLPS     X2, X2, X6
	VADDPS       X6, X2, X2
	VMOVSHDUP    X2, X6
	VADDSS       X6, X2, X2
	VMULSS       X5, X2, X2
	VMOVSS       X2, 8(DI)(R10*4)

	VEXTRACTF128 $1, Y3, X6
	VADDPS       X6, X3, X3
	VMOVHLPS     X3, X3, X6
	VADDPS       X6, X3, X3
	VMOVSHDUP    X3, X6
	VADDSS       X6, X3, X3
	VMULSS       X5, X3, X3
	VMOVSS       X3, 12(DI)(R10*4)

	LEAQ (R13)(R8*1), BX     // row t+4
	MOVQ R11, R10
	JMP  s4_rows

s1_check:
	CMPQ R10, R9
	JGE  s_done

s1_row:
	VXORPS Y0, Y0, Y0
	XORQ   AX, AX

s1_col:
	VMOVUPS     (SI)(AX*4), Y1
	VFMADD231PS (BX)(AX*4), Y1, Y0
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         s1_col

	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VMULSS       X5, X0, X0
	VMOVSS       X0, (DI)(R10*4)
	ADDQ         R8, BX
	INCQ         R10
	CMPQ         R10, R9
	JLT          s1_row

s_done:
	VZEROUPPER
	RET

// func attnMixAVX2(out, w, v *float32, d, stride, n int)
// d is a multiple of 8. out[j] += w[t]·v[t][j] over the n rows (one FMA
// each, in row order). 64 columns (8 strips) at a time: eight independent
// accumulators take each broadcast weight, so the rows stream at the FMA
// units' throughput instead of one chain's latency; then 32, 16 and 8
// columns (d < 64 or its remainder).
TEXT ·attnMixAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ v+16(FP), BX
	MOVQ d+24(FP), CX
	MOVQ stride+32(FP), R8
	SHLQ $2, R8
	MOVQ n+40(FP), R9
	XORQ AX, AX              // column

m8_strips:
	LEAQ 64(AX), R11
	CMPQ R11, CX
	JGT  m4_check
	VMOVUPS (DI)(AX*4), Y0
	VMOVUPS 32(DI)(AX*4), Y1
	VMOVUPS 64(DI)(AX*4), Y2
	VMOVUPS 96(DI)(AX*4), Y3
	VMOVUPS 128(DI)(AX*4), Y4
	VMOVUPS 160(DI)(AX*4), Y5
	VMOVUPS 192(DI)(AX*4), Y6
	VMOVUPS 224(DI)(AX*4), Y7
	LEAQ    (BX)(AX*4), DX   // &v[0][col]
	XORQ    R10, R10         // t

m8_row:
	VBROADCASTSS (SI)(R10*4), Y8
	VFMADD231PS  (DX), Y8, Y0
	VFMADD231PS  32(DX), Y8, Y1
	VFMADD231PS  64(DX), Y8, Y2
	VFMADD231PS  96(DX), Y8, Y3
	VFMADD231PS  128(DX), Y8, Y4
	VFMADD231PS  160(DX), Y8, Y5
	VFMADD231PS  192(DX), Y8, Y6
	VFMADD231PS  224(DX), Y8, Y7
	ADDQ         R8, DX
	INCQ         R10
	CMPQ         R10, R9
	JLT          m8_row

	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	VMOVUPS Y4, 128(DI)(AX*4)
	VMOVUPS Y5, 160(DI)(AX*4)
	VMOVUPS Y6, 192(DI)(AX*4)
	VMOVUPS Y7, 224(DI)(AX*4)
	MOVQ    R11, AX
	JMP     m8_strips

m4_check:
	LEAQ 32(AX), R11
	CMPQ R11, CX
	JGT  m2_check
	VMOVUPS (DI)(AX*4), Y0
	VMOVUPS 32(DI)(AX*4), Y1
	VMOVUPS 64(DI)(AX*4), Y2
	VMOVUPS 96(DI)(AX*4), Y3
	LEAQ    (BX)(AX*4), DX
	XORQ    R10, R10

m4_row:
	VBROADCASTSS (SI)(R10*4), Y8
	VFMADD231PS  (DX), Y8, Y0
	VFMADD231PS  32(DX), Y8, Y1
	VFMADD231PS  64(DX), Y8, Y2
	VFMADD231PS  96(DX), Y8, Y3
	ADDQ         R8, DX
	INCQ         R10
	CMPQ         R10, R9
	JLT          m4_row

	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	MOVQ    R11, AX

m2_check:
	LEAQ 16(AX), R11
	CMPQ R11, CX
	JGT  m1_check
	VMOVUPS (DI)(AX*4), Y0
	VMOVUPS 32(DI)(AX*4), Y1
	LEAQ    (BX)(AX*4), DX
	XORQ    R10, R10

m2_row:
	VBROADCASTSS (SI)(R10*4), Y8
	VFMADD231PS  (DX), Y8, Y0
	VFMADD231PS  32(DX), Y8, Y1
	ADDQ         R8, DX
	INCQ         R10
	CMPQ         R10, R9
	JLT          m2_row

	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	MOVQ    R11, AX

m1_check:
	CMPQ AX, CX
	JGE  m_done

m1_strip:
	VMOVUPS (DI)(AX*4), Y0
	LEAQ    (BX)(AX*4), DX
	XORQ    R10, R10

m1_row:
	VBROADCASTSS (SI)(R10*4), Y1
	VFMADD231PS  (DX), Y1, Y0
	ADDQ         R8, DX
	INCQ         R10
	CMPQ         R10, R9
	JLT          m1_row

	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     m1_strip

m_done:
	VZEROUPPER
	RET
