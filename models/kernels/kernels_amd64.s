//go:build amd64 && !purego

#include "textflag.h"

// AVX2+FMA kernels. Every routine ends with VZEROUPPER: the Go compiler emits
// legacy-SSE float code, which is slowed down by dirty upper ymm halves
// (go-stack.md hazard H1).
//
// Row kernels (matVecAVX2, matMul4x3AVX2, matMul4x2AVX2) compute every (row, token) product
// in the same order: one 8-lane accumulator, 8 columns at a time by FMA, the
// last cols%8 columns by a masked load, then HSUM. So a row gives the same bits
// whichever kernel, block size or worker computed it.

// tailmask<>: 8 all-ones lanes then 8 zero lanes. The 8 lanes starting at
// lane 8-k are a VMASKMOVPS mask for the first k lanes; masked-out lanes are
// neither read (no fault past the end of a slice) nor written.
DATA tailmask<>+0(SB)/4, $0xffffffff
DATA tailmask<>+4(SB)/4, $0xffffffff
DATA tailmask<>+8(SB)/4, $0xffffffff
DATA tailmask<>+12(SB)/4, $0xffffffff
DATA tailmask<>+16(SB)/4, $0xffffffff
DATA tailmask<>+20(SB)/4, $0xffffffff
DATA tailmask<>+24(SB)/4, $0xffffffff
DATA tailmask<>+28(SB)/4, $0xffffffff
DATA tailmask<>+32(SB)/4, $0
DATA tailmask<>+36(SB)/4, $0
DATA tailmask<>+40(SB)/4, $0
DATA tailmask<>+44(SB)/4, $0
DATA tailmask<>+48(SB)/4, $0
DATA tailmask<>+52(SB)/4, $0
DATA tailmask<>+56(SB)/4, $0
DATA tailmask<>+60(SB)/4, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// MASKADDR sets ptr to the mask for the first k lanes (k = n&7 must be in
// tmp, 1..7): tailmask+32-4k.
#define MASKADDR(tmp, ptr) \
	LEAQ tailmask<>+32(SB), ptr; \
	SHLQ $2, tmp; \
	SUBQ tmp, ptr

// HSUM reduces the 8 lanes of Y (whose low half is X) into the low lane of X,
// in a fixed order: (lo+hi) pairs, then lanes {0,2}+{1,3}, then the last add.
#define HSUM(Y, X, T) \
	VEXTRACTF128 $1, Y, T; \
	VADDPS       T, X, X; \
	VMOVHLPS     X, X, T; \
	VADDPS       T, X, X; \
	VMOVSHDUP    X, T; \
	VADDSS       T, X, X

// func dotAVX2(a, b *float32, n int) float32
// Eight independent accumulators (64 floats per iteration) hide FMA latency.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   AX, AX
	MOVQ   CX, DX
	ANDQ   $-64, DX
	JZ     dot_by8

dot_loop64:
	VMOVUPS     (SI)(AX*4), Y8
	VMOVUPS     32(SI)(AX*4), Y9
	VMOVUPS     64(SI)(AX*4), Y10
	VMOVUPS     96(SI)(AX*4), Y11
	VFMADD231PS (DI)(AX*4), Y8, Y0
	VFMADD231PS 32(DI)(AX*4), Y9, Y1
	VFMADD231PS 64(DI)(AX*4), Y10, Y2
	VFMADD231PS 96(DI)(AX*4), Y11, Y3
	VMOVUPS     128(SI)(AX*4), Y12
	VMOVUPS     160(SI)(AX*4), Y13
	VMOVUPS     192(SI)(AX*4), Y14
	VMOVUPS     224(SI)(AX*4), Y15
	VFMADD231PS 128(DI)(AX*4), Y12, Y4
	VFMADD231PS 160(DI)(AX*4), Y13, Y5
	VFMADD231PS 192(DI)(AX*4), Y14, Y6
	VFMADD231PS 224(DI)(AX*4), Y15, Y7
	ADDQ        $64, AX
	CMPQ        AX, DX
	JLT         dot_loop64

dot_by8:
	MOVQ CX, DX
	ANDQ $-8, DX
	CMPQ AX, DX
	JGE  dot_tail

dot_loop8:
	VMOVUPS     (SI)(AX*4), Y8
	VFMADD231PS (DI)(AX*4), Y8, Y0
	ADDQ        $8, AX
	CMPQ        AX, DX
	JLT         dot_loop8

dot_tail:
	MOVQ CX, DX
	ANDQ $7, DX
	JZ   dot_reduce
	MASKADDR(DX, R8)
	VMOVDQU     (R8), Y15
	VMASKMOVPS  (SI)(AX*4), Y15, Y8
	VMASKMOVPS  (DI)(AX*4), Y15, Y9
	VFMADD231PS Y9, Y8, Y1

dot_reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y5, Y4, Y4
	VADDPS Y7, Y6, Y6
	VADDPS Y2, Y0, Y0
	VADDPS Y6, Y4, Y4
	VADDPS Y4, Y0, Y0
	HSUM(Y0, X0, X8)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func axpyAVX2(alpha float32, x, y *float32, n int)
// y[i] += alpha*x[i] as one FMA (a single rounding, unlike the Go loop).
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS alpha+0(FP), Y0
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	MOVQ         n+24(FP), CX
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-32, DX
	JZ           axpy_by8

axpy_loop32:
	VMOVUPS     (DI)(AX*4), Y1
	VMOVUPS     32(DI)(AX*4), Y2
	VMOVUPS     64(DI)(AX*4), Y3
	VMOVUPS     96(DI)(AX*4), Y4
	VFMADD231PS (SI)(AX*4), Y0, Y1
	VFMADD231PS 32(SI)(AX*4), Y0, Y2
	VFMADD231PS 64(SI)(AX*4), Y0, Y3
	VFMADD231PS 96(SI)(AX*4), Y0, Y4
	VMOVUPS     Y1, (DI)(AX*4)
	VMOVUPS     Y2, 32(DI)(AX*4)
	VMOVUPS     Y3, 64(DI)(AX*4)
	VMOVUPS     Y4, 96(DI)(AX*4)
	ADDQ        $32, AX
	CMPQ        AX, DX
	JLT         axpy_loop32

axpy_by8:
	MOVQ CX, DX
	ANDQ $-8, DX
	CMPQ AX, DX
	JGE  axpy_tail

axpy_loop8:
	VMOVUPS     (DI)(AX*4), Y1
	VFMADD231PS (SI)(AX*4), Y0, Y1
	VMOVUPS     Y1, (DI)(AX*4)
	ADDQ        $8, AX
	CMPQ        AX, DX
	JLT         axpy_loop8

axpy_tail:
	MOVQ CX, DX
	ANDQ $7, DX
	JZ   axpy_done
	MASKADDR(DX, R8)
	VMOVDQU     (R8), Y15
	VMASKMOVPS  (DI)(AX*4), Y15, Y1
	VMASKMOVPS  (SI)(AX*4), Y15, Y2
	VFMADD231PS Y2, Y0, Y1
	VMASKMOVPS  Y1, Y15, (DI)(AX*4)

axpy_done:
	VZEROUPPER
	RET

// func matVecAVX2(out, w, x *float32, rows, cols int)
// out[r] = dot(w[r*cols:], x[:cols]) for r < rows. Rows go 8, then 4, then 1
// at a time; a block shares each x load and keeps one accumulator per row, so
// 8 rows give 8 independent FMA chains. Row pointers point at the end of the
// 8-aligned part of each row and AX counts up from -cols8 to 0.
//
// Registers: AX index, BX x end, CX cols, DX rows left, DI out,
// SI R8 R9 R10 R11 R12 R13 R14 row pointers, Y15 tail mask.
TEXT ·matVecAVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), BX
	MOVQ rows+24(FP), DX
	MOVQ cols+32(FP), CX

	// Tail mask, computed once.
	MOVQ CX, AX
	ANDQ $7, AX
	JZ   mv_nomask
	MASKADDR(AX, R8)
	VMOVDQU (R8), Y15

mv_nomask:
	// Point x and the first row at the end of their 8-aligned parts.
	MOVQ CX, AX
	ANDQ $-8, AX
	LEAQ (BX)(AX*4), BX
	LEAQ (SI)(AX*4), SI

mv_block8:
	CMPQ DX, $8
	JLT  mv_block4
	LEAQ (SI)(CX*4), R8
	LEAQ (R8)(CX*4), R9
	LEAQ (R9)(CX*4), R10
	LEAQ (R10)(CX*4), R11
	LEAQ (R11)(CX*4), R12
	LEAQ (R12)(CX*4), R13
	LEAQ (R13)(CX*4), R14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   CX, AX
	ANDQ   $-8, AX
	NEGQ   AX
	JZ     mv8_tail

mv8_loop:
	VMOVUPS     (BX)(AX*4), Y8
	VFMADD231PS (SI)(AX*4), Y8, Y0
	VFMADD231PS (R8)(AX*4), Y8, Y1
	VFMADD231PS (R9)(AX*4), Y8, Y2
	VFMADD231PS (R10)(AX*4), Y8, Y3
	VFMADD231PS (R11)(AX*4), Y8, Y4
	VFMADD231PS (R12)(AX*4), Y8, Y5
	VFMADD231PS (R13)(AX*4), Y8, Y6
	VFMADD231PS (R14)(AX*4), Y8, Y7
	ADDQ        $8, AX
	JNZ         mv8_loop

mv8_tail:
	TESTQ $7, CX
	JZ    mv8_store
	VMASKMOVPS  (BX), Y15, Y9
	VMASKMOVPS  (SI), Y15, Y10
	VFMADD231PS Y10, Y9, Y0
	VMASKMOVPS  (R8), Y15, Y10
	VFMADD231PS Y10, Y9, Y1
	VMASKMOVPS  (R9), Y15, Y10
	VFMADD231PS Y10, Y9, Y2
	VMASKMOVPS  (R10), Y15, Y10
	VFMADD231PS Y10, Y9, Y3
	VMASKMOVPS  (R11), Y15, Y10
	VFMADD231PS Y10, Y9, Y4
	VMASKMOVPS  (R12), Y15, Y10
	VFMADD231PS Y10, Y9, Y5
	VMASKMOVPS  (R13), Y15, Y10
	VFMADD231PS Y10, Y9, Y6
	VMASKMOVPS  (R14), Y15, Y10
	VFMADD231PS Y10, Y9, Y7

mv8_store:
	HSUM(Y0, X0, X8)
	HSUM(Y1, X1, X8)
	HSUM(Y2, X2, X8)
	HSUM(Y3, X3, X8)
	HSUM(Y4, X4, X8)
	HSUM(Y5, X5, X8)
	HSUM(Y6, X6, X8)
	HSUM(Y7, X7, X8)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, 12(DI)
	VMOVSS X4, 16(DI)
	VMOVSS X5, 20(DI)
	VMOVSS X6, 24(DI)
	VMOVSS X7, 28(DI)
	ADDQ   $32, DI
	LEAQ   (R14)(CX*4), SI
	SUBQ   $8, DX
	JMP    mv_block8

mv_block4:
	CMPQ DX, $4
	JLT  mv_block1
	LEAQ (SI)(CX*4), R8
	LEAQ (R8)(CX*4), R9
	LEAQ (R9)(CX*4), R10
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   CX, AX
	ANDQ   $-8, AX
	NEGQ   AX
	JZ     mv4_tail

mv4_loop:
	VMOVUPS     (BX)(AX*4), Y8
	VFMADD231PS (SI)(AX*4), Y8, Y0
	VFMADD231PS (R8)(AX*4), Y8, Y1
	VFMADD231PS (R9)(AX*4), Y8, Y2
	VFMADD231PS (R10)(AX*4), Y8, Y3
	ADDQ        $8, AX
	JNZ         mv4_loop

mv4_tail:
	TESTQ $7, CX
	JZ    mv4_store
	VMASKMOVPS  (BX), Y15, Y9
	VMASKMOVPS  (SI), Y15, Y10
	VFMADD231PS Y10, Y9, Y0
	VMASKMOVPS  (R8), Y15, Y10
	VFMADD231PS Y10, Y9, Y1
	VMASKMOVPS  (R9), Y15, Y10
	VFMADD231PS Y10, Y9, Y2
	VMASKMOVPS  (R10), Y15, Y10
	VFMADD231PS Y10, Y9, Y3

mv4_store:
	HSUM(Y0, X0, X8)
	HSUM(Y1, X1, X8)
	HSUM(Y2, X2, X8)
	HSUM(Y3, X3, X8)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, 12(DI)
	ADDQ   $16, DI
	LEAQ   (R10)(CX*4), SI
	SUBQ   $4, DX

mv_block1:
	TESTQ DX, DX
	JZ    mv_done
	VXORPS Y0, Y0, Y0
	MOVQ   CX, AX
	ANDQ   $-8, AX
	NEGQ   AX
	JZ     mv1_tail

mv1_loop:
	VMOVUPS     (BX)(AX*4), Y8
	VFMADD231PS (SI)(AX*4), Y8, Y0
	ADDQ        $8, AX
	JNZ         mv1_loop

mv1_tail:
	TESTQ $7, CX
	JZ    mv1_store
	VMASKMOVPS  (BX), Y15, Y9
	VMASKMOVPS  (SI), Y15, Y10
	VFMADD231PS Y10, Y9, Y0

mv1_store:
	HSUM(Y0, X0, X8)
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	LEAQ   (SI)(CX*4), SI
	DECQ   DX
	JMP    mv_block1

mv_done:
	VZEROUPPER
	RET

// func matMul4x3AVX2(out, w, x *float32, cols, ldo int, pf, pfEnd uintptr, pfStep int)
// One register tile of the batched product: 4 weight rows × 3 tokens.
// out[t*ldo+r] = dot(w[r*cols:], x[t*cols:]) for r < 4, t < 3. The 3 token
// chunks stay in Y12-Y14 and each weight chunk is loaded once into Y15 and
// used 3 times: 7 loads per 12 FMAs. Accumulator for (r, t) is Y(3r+t).
//
// While pf < pfEnd, each iteration fetches pf's line (and the next, when
// pfStep is 128) into L1 and moves pf on by pfStep: the caller hands each
// tile of a block its share of a later block (matMulAsm), because alone the
// hardware prefetcher left a batched decode's tile waiting on memory
// (bench110M F32 batch-8, AVX2).
//
// Registers: AX index, CX cols, DX ldo in bytes, DI out,
// SI R8 R9 R10 weight rows, BX R11 R12 tokens, R13 prefetch / tail mask
// address, R14 prefetch end, R15 pfStep-64.
#define MMPF(skip) \
	CMPQ R13, R14; \
	JAE  skip; \
	PREFETCHT0 (R13); \
	PREFETCHT0 (R13)(R15*1); \
	LEAQ 64(R13)(R15*1), R13; \
skip:

TEXT ·matMul4x3AVX2(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), BX
	MOVQ cols+24(FP), CX
	MOVQ ldo+32(FP), DX
	SHLQ $2, DX

	MOVQ CX, AX
	ANDQ $-8, AX
	LEAQ (SI)(AX*4), SI
	LEAQ (BX)(AX*4), BX
	LEAQ (SI)(CX*4), R8
	LEAQ (R8)(CX*4), R9
	LEAQ (R9)(CX*4), R10
	LEAQ (BX)(CX*4), R11
	LEAQ (R11)(CX*4), R12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ   pf+40(FP), R13
	MOVQ   pfEnd+48(FP), R14
	MOVQ   pfStep+56(FP), R15
	SUBQ   $64, R15
	NEGQ   AX
	JZ     mm_tail

mm_loop:
	MMPF(mm_pf)
	VMOVUPS     (BX)(AX*4), Y12
	VMOVUPS     (R11)(AX*4), Y13
	VMOVUPS     (R12)(AX*4), Y14
	VMOVUPS     (SI)(AX*4), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y1
	VFMADD231PS Y15, Y14, Y2
	VMOVUPS     (R8)(AX*4), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y5
	VMOVUPS     (R9)(AX*4), Y15
	VFMADD231PS Y15, Y12, Y6
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS     (R10)(AX*4), Y15
	VFMADD231PS Y15, Y12, Y9
	VFMADD231PS Y15, Y13, Y10
	VFMADD231PS Y15, Y14, Y11
	ADDQ        $8, AX
	JNZ         mm_loop

mm_tail:
	// All 16 registers are in use, so the mask is reloaded into Y15 before
	// each masked weight load, which overwrites it.
	MOVQ CX, AX
	ANDQ $7, AX
	JZ   mm_store
	MASKADDR(AX, R13)
	VMOVDQU     (R13), Y15
	VMASKMOVPS  (BX), Y15, Y12
	VMASKMOVPS  (R11), Y15, Y13
	VMASKMOVPS  (R12), Y15, Y14
	VMASKMOVPS  (SI), Y15, Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y1
	VFMADD231PS Y15, Y14, Y2
	VMOVDQU     (R13), Y15
	VMASKMOVPS  (R8), Y15, Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y5
	VMOVDQU     (R13), Y15
	VMASKMOVPS  (R9), Y15, Y15
	VFMADD231PS Y15, Y12, Y6
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y8
	VMOVDQU     (R13), Y15
	VMASKMOVPS  (R10), Y15, Y15
	VFMADD231PS Y15, Y12, Y9
	VFMADD231PS Y15, Y13, Y10
	VFMADD231PS Y15, Y14, Y11

mm_store:
	HSUM(Y0, X0, X12)
	HSUM(Y1, X1, X12)
	HSUM(Y2, X2, X12)
	HSUM(Y3, X3, X12)
	HSUM(Y4, X4, X12)
	HSUM(Y5, X5, X12)
	HSUM(Y6, X6, X12)
	HSUM(Y7, X7, X12)
	HSUM(Y8, X8, X12)
	HSUM(Y9, X9, X12)
	HSUM(Y10, X10, X12)
	HSUM(Y11, X11, X12)
	LEAQ   (DI)(DX*1), R8
	LEAQ   (DI)(DX*2), R9
	VMOVSS X0, (DI)
	VMOVSS X3, 4(DI)
	VMOVSS X6, 8(DI)
	VMOVSS X9, 12(DI)
	VMOVSS X1, (R8)
	VMOVSS X4, 4(R8)
	VMOVSS X7, 8(R8)
	VMOVSS X10, 12(R8)
	VMOVSS X2, (R9)
	VMOVSS X5, 4(R9)
	VMOVSS X8, 8(R9)
	VMOVSS X11, 12(R9)
	VZEROUPPER
	RET

// func matMul4x2AVX2(out, w, x *float32, cols, ldo int, pf, pfEnd uintptr, pfStep int)
// matMul4x3AVX2 for 2 tokens, so a batch of 8 is 3+3+2 tokens, not 3+3 and
// two 4-row matvecs that each read the block again. Each iteration loads the
// 4 weight chunks into Y10-Y13 before its 8 FMAs (6 loads per 8 FMAs).
// Accumulator for (r, t) is Y(2r+t).
//
// Registers: AX index, CX cols, DX ldo in bytes, DI out,
// SI R8 R9 R10 weight rows, BX R11 tokens, R13 R14 R15 as in matMul4x3AVX2.
TEXT ·matMul4x2AVX2(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), BX
	MOVQ cols+24(FP), CX
	MOVQ ldo+32(FP), DX
	SHLQ $2, DX

	MOVQ CX, AX
	ANDQ $-8, AX
	LEAQ (SI)(AX*4), SI
	LEAQ (BX)(AX*4), BX
	LEAQ (SI)(CX*4), R8
	LEAQ (R8)(CX*4), R9
	LEAQ (R9)(CX*4), R10
	LEAQ (BX)(CX*4), R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   pf+40(FP), R13
	MOVQ   pfEnd+48(FP), R14
	MOVQ   pfStep+56(FP), R15
	SUBQ   $64, R15
	NEGQ   AX
	JZ     mm2_tail

mm2_loop:
	MMPF(mm2_pf)
	VMOVUPS     (BX)(AX*4), Y8
	VMOVUPS     (R11)(AX*4), Y9
	VMOVUPS     (SI)(AX*4), Y10
	VMOVUPS     (R8)(AX*4), Y11
	VMOVUPS     (R9)(AX*4), Y12
	VMOVUPS     (R10)(AX*4), Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y11, Y9, Y3
	VFMADD231PS Y12, Y8, Y4
	VFMADD231PS Y12, Y9, Y5
	VFMADD231PS Y13, Y8, Y6
	VFMADD231PS Y13, Y9, Y7
	ADDQ        $8, AX
	JNZ         mm2_loop

mm2_tail:
	MOVQ CX, AX
	ANDQ $7, AX
	JZ   mm2_store
	MASKADDR(AX, R13)
	VMOVDQU     (R13), Y15
	VMASKMOVPS  (BX), Y15, Y8
	VMASKMOVPS  (R11), Y15, Y9
	VMASKMOVPS  (SI), Y15, Y10
	VMASKMOVPS  (R8), Y15, Y11
	VMASKMOVPS  (R9), Y15, Y12
	VMASKMOVPS  (R10), Y15, Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y11, Y9, Y3
	VFMADD231PS Y12, Y8, Y4
	VFMADD231PS Y12, Y9, Y5
	VFMADD231PS Y13, Y8, Y6
	VFMADD231PS Y13, Y9, Y7

mm2_store:
	HSUM(Y0, X0, X12)
	HSUM(Y1, X1, X12)
	HSUM(Y2, X2, X12)
	HSUM(Y3, X3, X12)
	HSUM(Y4, X4, X12)
	HSUM(Y5, X5, X12)
	HSUM(Y6, X6, X12)
	HSUM(Y7, X7, X12)
	LEAQ   (DI)(DX*1), R8
	VMOVSS X0, (DI)
	VMOVSS X2, 4(DI)
	VMOVSS X4, 8(DI)
	VMOVSS X6, 12(DI)
	VMOVSS X1, (R8)
	VMOVSS X3, 4(R8)
	VMOVSS X5, 8(R8)
	VMOVSS X7, 12(R8)
	VZEROUPPER
	RET

// func spinPause()
TEXT ·spinPause(SB), NOSPLIT, $0-0
	PAUSE
	RET

// Integer dot products for int8 weights × int8 activations. VPMADDUBSW wants
// unsigned × signed bytes, so the sign of x moves onto w (VPSIGNB) and |x| is
// the unsigned side; pairs are summed to int16 (at most 2·127² = 32258, no
// saturation as long as no value is -128), then to int32 by VPMADDWD with ones.
// Approach as in go-stack.md §2 (i8×i8 asm) and llama.cpp's mul_sum_i8_pairs.

// HSUMD reduces the 8 int32 lanes of Y (low half X) into the low lane of X.
#define HSUMD(Y, X, T) \
	VEXTRACTI128 $1, Y, T; \
	VPADDD       T, X, X; \
	VPSHUFD      $0x4e, X, T; \
	VPADDD       T, X, X; \
	VPSHUFD      $0xb1, X, T; \
	VPADDD       T, X, X

// I8DOT adds the int32 pair sums of w chunk (in W, clobbered) times x
// (X8 = x, X10 = |x|, Y11 = int16 ones) into ACC.
#define I8DOT(W, ACC) \
	VPSIGNB    Y8, W, W; \
	VPMADDUBSW W, Y10, W; \
	VPMADDWD   Y11, W, W; \
	VPADDD     W, ACC, ACC

// func i8DotsAVX2(dst *int32, w, x *int8, rows, cols int)
// dst[r] = Σ w[r*cols+c]·x[c] over c < cols&^31 (the caller adds the rest).
// Four rows at a time share each x load.
TEXT ·i8DotsAVX2(SB), NOSPLIT, $0-40
	MOVQ     dst+0(FP), DI
	MOVQ     w+8(FP), SI
	MOVQ     x+16(FP), BX
	MOVQ     rows+24(FP), DX
	MOVQ     cols+32(FP), CX
	VPCMPEQW Y11, Y11, Y11
	VPSRLW   $15, Y11, Y11
	MOVQ     CX, AX
	ANDQ     $-32, AX
	ADDQ     AX, BX
	ADDQ     AX, SI

i8_block4:
	CMPQ  DX, $4
	JLT   i8_block1
	LEAQ  (SI)(CX*1), R8
	LEAQ  (R8)(CX*1), R9
	LEAQ  (R9)(CX*1), R10
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	MOVQ  CX, AX
	ANDQ  $-32, AX
	NEGQ  AX
	JZ    i8_4store

i8_4loop:
	VMOVDQU (BX)(AX*1), Y8
	VPABSB  Y8, Y10
	VMOVDQU (SI)(AX*1), Y12
	VMOVDQU (R8)(AX*1), Y13
	VMOVDQU (R9)(AX*1), Y14
	VMOVDQU (R10)(AX*1), Y15
	I8DOT(Y12, Y0)
	I8DOT(Y13, Y1)
	I8DOT(Y14, Y2)
	I8DOT(Y15, Y3)
	ADDQ    $32, AX
	JNZ     i8_4loop

i8_4store:
	HSUMD(Y0, X0, X12)
	HSUMD(Y1, X1, X12)
	HSUMD(Y2, X2, X12)
	HSUMD(Y3, X3, X12)
	VMOVD X0, (DI)
	VMOVD X1, 4(DI)
	VMOVD X2, 8(DI)
	VMOVD X3, 12(DI)
	ADDQ  $16, DI
	LEAQ  (R10)(CX*1), SI
	SUBQ  $4, DX
	JMP   i8_block4

i8_block1:
	TESTQ DX, DX
	JZ    i8_done
	VPXOR Y0, Y0, Y0
	MOVQ  CX, AX
	ANDQ  $-32, AX
	NEGQ  AX
	JZ    i8_1store

i8_1loop:
	VMOVDQU (BX)(AX*1), Y8
	VPABSB  Y8, Y10
	VMOVDQU (SI)(AX*1), Y12
	I8DOT(Y12, Y0)
	ADDQ    $32, AX
	JNZ     i8_1loop

i8_1store:
	HSUMD(Y0, X0, X12)
	VMOVD X0, (DI)
	ADDQ  $4, DI
	LEAQ  (SI)(CX*1), SI
	DECQ  DX
	JMP   i8_block1

i8_done:
	VZEROUPPER
	RET
