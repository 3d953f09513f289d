// The bodies of the kernels of interleaved 2-byte weights (f16il.go),
// included by f16_amd64.s and bf16_amd64.s, which define the functions'
// names (MATVECIL512, MATVECILAVX2, MATMULIL4X3, WIDENIL) and the widening
// of their kind: WIDEN(M, Y), Y = the 8 weights at M (16 bytes or an xmm),
// and WIDEN512(M, Z), Z = the 16 weights at M (32 bytes), exactly. Each
// row keeps matVecAVX2's lanes, accumulator and FMA order (kernels_amd64.s),
// so every output has the bits of the float32 kernels on the widened
// weights.

// halftail<>: 8 all-ones dwords then 8 zero dwords (kernels_amd64.s's
// tailmask). The 8 dwords at +32-4k are a mask for the first k lanes.
DATA halftail<>+0(SB)/4, $0xffffffff
DATA halftail<>+4(SB)/4, $0xffffffff
DATA halftail<>+8(SB)/4, $0xffffffff
DATA halftail<>+12(SB)/4, $0xffffffff
DATA halftail<>+16(SB)/4, $0xffffffff
DATA halftail<>+20(SB)/4, $0xffffffff
DATA halftail<>+24(SB)/4, $0xffffffff
DATA halftail<>+28(SB)/4, $0xffffffff
DATA halftail<>+32(SB)/4, $0
DATA halftail<>+36(SB)/4, $0
DATA halftail<>+40(SB)/4, $0
DATA halftail<>+44(SB)/4, $0
DATA halftail<>+48(SB)/4, $0
DATA halftail<>+52(SB)/4, $0
DATA halftail<>+56(SB)/4, $0
DATA halftail<>+60(SB)/4, $0
GLOBL halftail<>(SB), RODATA|NOPTR, $64

// HSUM as in kernels_amd64.s.
#define HSUM(Y, X, T) \
	VEXTRACTF128 $1, Y, T; \
	VADDPS       T, X, X; \
	VMOVHLPS     X, X, T; \
	VADDPS       T, X, X; \
	VMOVSHDUP    X, T; \
	VADDSS       T, X, X

// STORE4X3 ends a 4-row × 3-token tile (rows r in Y(3r)..Y(3r+2), token t
// in Y(3r+t)): each accumulator's 8 lanes summed as HSUM does and stored
// at out + t*ldo + r (out in DI, ldo the frame's), then returns.
#define STORE4X3 \
	MOVQ   ldo+32(FP), DX; \
	SHLQ   $2, DX; \
	HSUM(Y0, X0, X12); \
	HSUM(Y1, X1, X12); \
	HSUM(Y2, X2, X12); \
	HSUM(Y3, X3, X12); \
	HSUM(Y4, X4, X12); \
	HSUM(Y5, X5, X12); \
	HSUM(Y6, X6, X12); \
	HSUM(Y7, X7, X12); \
	HSUM(Y8, X8, X12); \
	HSUM(Y9, X9, X12); \
	HSUM(Y10, X10, X12); \
	HSUM(Y11, X11, X12); \
	LEAQ   (DI)(DX*1), R8; \
	LEAQ   (DI)(DX*2), R9; \
	VMOVSS X0, (DI); \
	VMOVSS X3, 4(DI); \
	VMOVSS X6, 8(DI); \
	VMOVSS X9, 12(DI); \
	VMOVSS X1, (R8); \
	VMOVSS X4, 4(R8); \
	VMOVSS X7, 8(R8); \
	VMOVSS X10, 12(R8); \
	VMOVSS X2, (R9); \
	VMOVSS X5, 4(R9); \
	VMOVSS X8, 8(R9); \
	VMOVSS X11, 12(R9); \
	VZEROUPPER; \
	RET

// HSUMPAIR stores the sums of Z's two rows (low and high 8 lanes, HSUM's
// order each) at O(DI) and O+4(DI); Y8 and X15 are scratch.
#define HSUMPAIR(Z, Y, X, O) \
	VEXTRACTF32X8 $1, Z, Y8; \
	HSUM(Y, X, X15); \
	VMOVSS        X, O(DI); \
	HSUM(Y8, X8, X15); \
	VMOVSS        X8, O+4(DI)

// ILCHUNK512 adds the chunk at SI times Z16 (its 8 activations in both
// halves) into Z0-Z7, rows 2k and 2k+1 in Zk.
#define ILCHUNK512 \
	WIDEN512(0(SI), Z8); \
	WIDEN512(32(SI), Z9); \
	WIDEN512(64(SI), Z10); \
	WIDEN512(96(SI), Z11); \
	VFMADD231PS Z16, Z8, Z0; \
	VFMADD231PS Z16, Z9, Z1; \
	VFMADD231PS Z16, Z10, Z2; \
	VFMADD231PS Z16, Z11, Z3; \
	WIDEN512(128(SI), Z12); \
	WIDEN512(160(SI), Z13); \
	WIDEN512(192(SI), Z14); \
	WIDEN512(224(SI), Z15); \
	VFMADD231PS Z16, Z12, Z4; \
	VFMADD231PS Z16, Z13, Z5; \
	VFMADD231PS Z16, Z14, Z6; \
	VFMADD231PS Z16, Z15, Z7

// func MATVECIL512(out *float32, w *uint16, x *float32, cols, ng int)
// out[0..16·ng) = the rows of the ng groups at w · x[:cols]: one
// sequential read, two rows per zmm, each in matVecAVX2's lanes and order
// (the last chunk's x by a masked load, its weights past cols +0).
TEXT MATVECIL512(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ ng+32(FP), R9

mvil512_group:
	MOVQ x+16(FP), BX
	MOVQ cols+24(FP), CX
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	MOVQ CX, DX
	SHRQ $3, DX
	JZ   mvil512_tail

mvil512_loop:
	VBROADCASTF32X8 (BX), Z16
	ILCHUNK512
	ADDQ $256, SI
	ADDQ $32, BX
	DECQ DX
	JNZ  mvil512_loop

mvil512_tail:
	ANDQ $7, CX
	JZ   mvil512_store
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z    (BX), K1, Y16
	VINSERTF32X8 $1, Y16, Z16, Z16
	ILCHUNK512
	ADDQ $256, SI

mvil512_store:
	HSUMPAIR(Z0, Y0, X0, 0)
	HSUMPAIR(Z1, Y1, X1, 8)
	HSUMPAIR(Z2, Y2, X2, 16)
	HSUMPAIR(Z3, Y3, X3, 24)
	HSUMPAIR(Z4, Y4, X4, 32)
	HSUMPAIR(Z5, Y5, X5, 40)
	HSUMPAIR(Z6, Y6, X6, 48)
	HSUMPAIR(Z7, Y7, X7, 56)
	ADDQ $64, DI
	DECQ R9
	JNZ  mvil512_group
	VZEROUPPER
	RET

// ILCHUNK8 adds rows 0-7 of the chunk at R8 times Y8 into Y0-Y7.
#define ILCHUNK8 \
	WIDEN(0(R8), Y9); \
	WIDEN(16(R8), Y10); \
	WIDEN(32(R8), Y11); \
	WIDEN(48(R8), Y12); \
	VFMADD231PS Y9, Y8, Y0; \
	VFMADD231PS Y10, Y8, Y1; \
	VFMADD231PS Y11, Y8, Y2; \
	VFMADD231PS Y12, Y8, Y3; \
	WIDEN(64(R8), Y9); \
	WIDEN(80(R8), Y10); \
	WIDEN(96(R8), Y11); \
	WIDEN(112(R8), Y12); \
	VFMADD231PS Y9, Y8, Y4; \
	VFMADD231PS Y10, Y8, Y5; \
	VFMADD231PS Y11, Y8, Y6; \
	VFMADD231PS Y12, Y8, Y7

// ILLOAD8(O) and ILSTORE8(O) move the 8 row sums at O(SP) into and out of
// Y0-Y7.
#define ILLOAD8(O) \
	VMOVUPS O(SP), Y0; \
	VMOVUPS O+32(SP), Y1; \
	VMOVUPS O+64(SP), Y2; \
	VMOVUPS O+96(SP), Y3; \
	VMOVUPS O+128(SP), Y4; \
	VMOVUPS O+160(SP), Y5; \
	VMOVUPS O+192(SP), Y6; \
	VMOVUPS O+224(SP), Y7

#define ILSTORE8(O) \
	VMOVUPS Y0, O(SP); \
	VMOVUPS Y1, O+32(SP); \
	VMOVUPS Y2, O+64(SP); \
	VMOVUPS Y3, O+96(SP); \
	VMOVUPS Y4, O+128(SP); \
	VMOVUPS Y5, O+160(SP); \
	VMOVUPS Y6, O+192(SP); \
	VMOVUPS Y7, O+224(SP)

// func MATVECILAVX2(out *float32, w *uint16, x *float32, cols int)
// MATVECIL512 with ymm: 16 sums and the operands do not fit in 16
// registers, so the row is taken in blocks of up to 16 chunks (4 KiB of the
// group), each by rows 0-7 then rows 8-15 (the first and second 128 bytes
// of every chunk), the sums kept in the frame between them. The block's
// lines are read once from memory, the second half's from L1.
//
// Registers: SI the block, BX its x, R9 full chunks left, R10 the block's
// chunks, R8 R11 R12 the half-block's chunk, x and count; Y15 the float
// tail mask; X13 scratch.
TEXT MATVECILAVX2(SB), $512-32
	MOVQ   w+8(FP), SI
	MOVQ   x+16(FP), BX
	MOVQ   cols+24(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	ILSTORE8(0)
	ILSTORE8(256)
	MOVQ   CX, R9
	SHRQ   $3, R9
	JZ     mvil2_tail

mvil2_block:
	MOVQ R9, R10
	CMPQ R10, $16
	JLE  mvil2_lo
	MOVQ $16, R10

mvil2_lo:
	ILLOAD8(0)
	MOVQ SI, R8
	MOVQ BX, R11
	MOVQ R10, R12

mvil2_lo_loop:
	PREFETCHT0 128(R8)
	PREFETCHT0 192(R8)
	VMOVUPS (R11), Y8
	ILCHUNK8
	ADDQ    $256, R8
	ADDQ    $32, R11
	DECQ    R12
	JNZ     mvil2_lo_loop
	ILSTORE8(0)
	ILLOAD8(256)
	LEAQ 128(SI), R8
	MOVQ BX, R11
	MOVQ R10, R12

mvil2_hi_loop:
	VMOVUPS (R11), Y8
	ILCHUNK8
	ADDQ    $256, R8
	ADDQ    $32, R11
	DECQ    R12
	JNZ     mvil2_hi_loop
	ILSTORE8(256)
	MOVQ R10, AX
	SHLQ $8, AX
	ADDQ AX, SI
	MOVQ R11, BX
	SUBQ R10, R9
	JNZ  mvil2_block

mvil2_tail:
	MOVQ CX, AX
	ANDQ $7, AX
	JZ   mvil2_store
	LEAQ halftail<>+32(SB), R8
	LEAQ (AX*4), R9
	SUBQ R9, R8
	VMOVDQU (R8), Y15
	VMASKMOVPS (BX), Y15, Y8
	ILLOAD8(0)
	MOVQ SI, R8
	ILCHUNK8
	ILSTORE8(0)
	ILLOAD8(256)
	LEAQ 128(SI), R8
	ILCHUNK8
	ILSTORE8(256)

mvil2_store:
	MOVQ out+0(FP), DI
	MOVQ $2, DX
	MOVQ SP, R8

mvil2_half:
	VMOVUPS (R8), Y0
	VMOVUPS 32(R8), Y1
	VMOVUPS 64(R8), Y2
	VMOVUPS 96(R8), Y3
	VMOVUPS 128(R8), Y4
	VMOVUPS 160(R8), Y5
	VMOVUPS 192(R8), Y6
	VMOVUPS 224(R8), Y7
	HSUM(Y0, X0, X13)
	HSUM(Y1, X1, X13)
	HSUM(Y2, X2, X13)
	HSUM(Y3, X3, X13)
	HSUM(Y4, X4, X13)
	HSUM(Y5, X5, X13)
	HSUM(Y6, X6, X13)
	HSUM(Y7, X7, X13)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, 12(DI)
	VMOVSS X4, 16(DI)
	VMOVSS X5, 20(DI)
	VMOVSS X6, 24(DI)
	VMOVSS X7, 28(DI)
	ADDQ   $32, DI
	ADDQ   $256, R8
	DECQ   DX
	JNZ    mvil2_half
	VZEROUPPER
	RET

// ILROW4X3(O) adds the row at O(R13) of the current chunk, widened into
// Y15, times the 3 tokens' chunks Y12-Y14 into A0-A2.
#define ILROW4X3(O, A0, A1, A2) \
	WIDEN(O(R13), Y15); \
	VFMADD231PS Y15, Y12, A0; \
	VFMADD231PS Y15, Y13, A1; \
	VFMADD231PS Y15, Y14, A2

// func MATMULIL4X3(out *float32, w *uint16, x *float32, cols, ldo int)
// MATMUL4X3 on 4 rows of an interleaved group (the first at w, the others
// 16 bytes apart, chunks 256 bytes apart): the same accumulators, order
// and sums. The last chunk's weights past cols are +0, so only the tokens
// take a masked load there. The 4 tiles of a group each read one line of
// every chunk, which the hardware prefetcher does not follow: each chunk's
// lines are prefetched 16 chunks ahead.
//
// Registers: AX index, CX cols, DI out, R13 the weights' chunk, BX R11 R12
// tokens, R8 the float tail mask's address; DX ldo in bytes at the store.
TEXT MATMULIL4X3(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), R13
	MOVQ x+16(FP), BX
	MOVQ cols+24(FP), CX

	MOVQ CX, AX
	ANDQ $-8, AX
	LEAQ (BX)(AX*4), BX
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
	NEGQ   AX
	JZ     mmil_tail

mmil_loop:
	PREFETCHT0 4096(R13)
	PREFETCHT0 4160(R13)
	PREFETCHT0 4224(R13)
	PREFETCHT0 4288(R13)
	VMOVUPS (BX)(AX*4), Y12
	VMOVUPS (R11)(AX*4), Y13
	VMOVUPS (R12)(AX*4), Y14
	ILROW4X3(0, Y0, Y1, Y2)
	ILROW4X3(16, Y3, Y4, Y5)
	ILROW4X3(32, Y6, Y7, Y8)
	ILROW4X3(48, Y9, Y10, Y11)
	ADDQ    $256, R13
	ADDQ    $8, AX
	JNZ     mmil_loop

mmil_tail:
	MOVQ CX, AX
	ANDQ $7, AX
	JZ   mmil_store
	LEAQ halftail<>+32(SB), R8
	SHLQ $2, AX
	SUBQ AX, R8
	VMOVDQU    (R8), Y15
	VMASKMOVPS (BX), Y15, Y12
	VMASKMOVPS (R11), Y15, Y13
	VMASKMOVPS (R12), Y15, Y14
	ILROW4X3(0, Y0, Y1, Y2)
	ILROW4X3(16, Y3, Y4, Y5)
	ILROW4X3(32, Y6, Y7, Y8)
	ILROW4X3(48, Y9, Y10, Y11)

mmil_store:
	STORE4X3

// func WIDENIL(dst *float32, src *uint16, nc, rows, ldd int)
// dst[i*ldd+8c : i*ldd+8c+8] = the 8 weights at src + 256c + 16i widened,
// for c < nc and i < rows: rows of an interleaved group, read in the
// layout's order two chunks at a time, so each row gets a whole 64-byte
// line at once (chunk by chunk each line was written in two halves, and
// rows 8 KiB apart, as 2048 columns are, share an L1 set: 16 of them
// evicted each other between the halves).
TEXT WIDENIL(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nc+16(FP), CX
	MOVQ rows+24(FP), DX
	MOVQ ldd+32(FP), R8
	SHLQ $2, R8
	TESTQ DX, DX
	JZ   wil_done
	CMPQ CX, $2
	JLT  wil_one

wil_pair:
	MOVQ SI, R9
	MOVQ DI, R10
	MOVQ DX, R11

wil_pair_row:
	WIDEN((R9), Y0)
	WIDEN(256(R9), Y1)
	VMOVUPS Y0, (R10)
	VMOVUPS Y1, 32(R10)
	ADDQ    $16, R9
	ADDQ    R8, R10
	DECQ    R11
	JNZ     wil_pair_row
	ADDQ    $512, SI
	ADDQ    $64, DI
	SUBQ    $2, CX
	CMPQ    CX, $2
	JGE     wil_pair

wil_one:
	TESTQ CX, CX
	JZ    wil_done
	MOVQ  SI, R9
	MOVQ  DI, R10
	MOVQ  DX, R11

wil_one_row:
	WIDEN((R9), Y0)
	VMOVUPS Y0, (R10)
	ADDQ    $16, R9
	ADDQ    R8, R10
	DECQ    R11
	JNZ     wil_one_row

wil_done:
	VZEROUPPER
	RET
