//go:build amd64 && !purego

#include "textflag.h"

// The interleaved bf16 kernels (halfmv_amd64.h holds their bodies, shared
// with f16): a bfloat16 is the top half of its float32, so 8 of them widen
// exactly by zero-extending each word to a dword and shifting it up 16 bits.
#define WIDEN(M, Y) VPMOVZXWD M, Y; VPSLLD $16, Y, Y
#define WIDEN512(M, Z) VPMOVZXWD M, Z; VPSLLD $16, Z, Z
#define MATVECIL512 ·matVecILBF16AVX512
#define MATVECILAVX2 ·matVecILBF16AVX2
#define WIDENIL ·widenILBF16AVX2
#define MATMULIL4X3 ·matMulIL4x3BF16AVX2

#include "halfmv_amd64.h"

// func roundBF16AVX2(dst, src *float32, n int)
// dst[i] = src[i] rounded to bf16 and back, for the first n&^7 values:
// gguf.F32ToBF16's (u + 0x7fff + (u>>16 & 1)) &^ 0xffff, or for a NaN
// (u | 0x400000) &^ 0xffff (kept quiet).
TEXT ·roundBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   round_done
	MOVL         $1, AX
	VMOVD        AX, X12
	VPBROADCASTD X12, Y12
	MOVL         $0x7fff, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	MOVL         $0xffff0000, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x400000, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15

round_loop:
	VMOVUPS   (SI), Y0
	VPSRLD    $16, Y0, Y1
	VPAND     Y12, Y1, Y1
	VPADDD    Y13, Y1, Y1
	VPADDD    Y0, Y1, Y1
	VPAND     Y14, Y1, Y1
	VPOR      Y15, Y0, Y2
	VPAND     Y14, Y2, Y2
	VCMPPS    $3, Y0, Y0, Y3
	VBLENDVPS Y3, Y2, Y1, Y1
	VMOVUPS   Y1, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       round_loop

round_done:
	VZEROUPPER
	RET
