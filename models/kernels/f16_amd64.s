//go:build amd64 && !purego

#include "textflag.h"

// F16-weight twins of matVecAVX2 and matMul4x3AVX2 (halfmv_amd64.h holds
// their bodies): VCVTPH2PS widens 8 halves exactly.
#define WIDEN(M, Y) VCVTPH2PS M, Y
#define MATVEC ·matVecF16AVX2
#define MATMUL4X3 ·matMul4x3F16AVX2
#define WIDEN512(M, Z) VCVTPH2PS M, Z
#define MATVECIL512 ·matVecILF16AVX512
#define MATVECILAVX2 ·matVecILF16AVX2
#define WIDENIL ·widenILF16AVX2
#define MATMULIL4X3 ·matMulIL4x3F16AVX2

#include "halfmv_amd64.h"

// func copyILAVX2(dst *uint16, src *uint16, nc, rows, ldd int)
// dst[i*ldd+8c : i*ldd+8c+8] = the 8 halves at src + 256c + 16i, for c < nc
// and i < rows: rows of an interleaved group copied out row-major, read in
// the layout's order (either kind: the bits are copied).
TEXT ·copyILAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nc+16(FP), CX
	MOVQ rows+24(FP), DX
	MOVQ ldd+32(FP), R8
	SHLQ $1, R8
	TESTQ CX, CX
	JZ   cil_done
	TESTQ DX, DX
	JZ   cil_done

cil_chunk:
	MOVQ SI, R9
	MOVQ DI, R10
	MOVQ DX, R11

cil_row:
	VMOVDQU (R9), X0
	VMOVDQU X0, (R10)
	ADDQ    $16, R9
	ADDQ    R8, R10
	DECQ    R11
	JNZ     cil_row
	ADDQ    $256, SI
	ADDQ    $16, DI
	DECQ    CX
	JNZ     cil_chunk

cil_done:
	RET
