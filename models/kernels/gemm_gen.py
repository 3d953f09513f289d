# Generates gemm_amd64.s: python3 gemm_gen.py > gemm_amd64.s (see gemm.go).
import sys

from asmgen import out, p, header

def rowaddr(i, off):
    base = ["SI", "R10", "R11", "R12"][i // 3]
    j = i % 3
    o = str(off) if off else ""
    if j == 0: return f"{o}({base})"
    if j == 1: return f"{o}({base})(R8*1)"
    return f"{o}({base})(R8*2)"

def kernel(name, mr, v, zmm):
    R = "Z" if zmm else "Y"
    vb = 64 if zmm else 32
    nr = v * vb // 4
    acc = lambda i, j: f"{R}{i*v+j}"
    nacc = mr * v
    if zmm:
        xr = [f"Z{24+j}" for j in range(v)]
        br = ["Z26", "Z27", "Z28", "Z29"]
    else:
        xr = [f"Y{nacc+j}" for j in range(v)]
        br = [f"Y{r}" for r in range(nacc + v, 16)]
    kb = nr * 4  # packed-x bytes per k
    p(f"// func {name}(out *float32, ldo, nt int, w *float32, ldw int, xp *float32, k int, c *float32)")
    p(f"// {mr} weight rows x {nr} packed tokens; see gemm.go.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
    p("\tMOVQ w+24(FP), SI")
    p("\tMOVQ ldw+32(FP), R8")
    p("\tSHLQ $2, R8")
    p("\tLEAQ (R8)(R8*2), R9")
    for i in range(1, (mr + 2) // 3):
        prev = "SI" if i == 1 else ["SI", "R10", "R11", "R12"][i - 1]
        p(f"\tLEAQ ({prev})(R9*1), {['SI','R10','R11','R12'][i]}")
    p("\tMOVQ xp+40(FP), DI")
    p("\tMOVQ k+48(FP), CX")
    for i in range(nacc):
        p(f"\tVXORPS {R}{i}, {R}{i}, {R}{i}")
    p("\tMOVQ CX, DX")
    p("\tSHRQ $2, DX")
    p(f"\tJZ   {name}_tail")
    p()
    def step(u, lbl_off):
        for j in range(v):
            p(f"\tVMOVUPS {u*kb + j*vb}(DI), {xr[j]}")
        for i in range(mr):
            b = br[i % len(br)]
            p(f"\tVBROADCASTSS {rowaddr(i, 4*u)}, {b}")
            for j in range(v):
                p(f"\tVFMADD231PS {xr[j]}, {b}, {acc(i,j)}")
    p(f"{name}_loop4:")
    for u in range(4):
        step(u, 0)
    for r in ["SI", "R10", "R11", "R12"][:(mr + 2) // 3]:
        p(f"\tADDQ $16, {r}")
    p(f"\tADDQ ${4*kb}, DI")
    p("\tDECQ DX")
    p(f"\tJNZ  {name}_loop4")
    p()
    p(f"{name}_tail:")
    p("\tANDQ $3, CX")
    p(f"\tJZ   {name}_store")
    p()
    p(f"{name}_loop1:")
    step(0, 0)
    for r in ["SI", "R10", "R11", "R12"][:(mr + 2) // 3]:
        p(f"\tADDQ $4, {r}")
    p(f"\tADDQ ${kb}, DI")
    p("\tDECQ CX")
    p(f"\tJNZ  {name}_loop1")
    p()
    p(f"{name}_store:")
    p("\tMOVQ c+56(FP), AX")
    for i in range(mr):
        for j in range(v):
            p(f"\tVMOVUPS {acc(i,j)}, {i*kb + j*vb}(AX)")
    p("\tVZEROUPPER")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+8(FP), DX")
    p("\tSHLQ $2, DX")
    p("\tMOVQ nt+16(FP), CX")
    p()
    p(f"{name}_scatter:")
    for i in range(mr):
        p(f"\tMOVL {i*kb}(AX), BX")
        p(f"\tMOVL BX, {4*i}(DI)")
    p("\tADDQ $4, AX")
    p("\tADDQ DX, DI")
    p("\tDECQ CX")
    p(f"\tJNZ  {name}_scatter")
    p("\tRET")
    p()

header("gemm_gen.py", "gemm_amd64.s")
p("// Each kernel computes one register tile of out = X·Wᵀ: c[i][j] = Σ_k w[i*ldw+k]·xp[k*NR+j]")
p("// for its MR weight rows i and NR packed tokens j, with one FMA accumulator")
p("// lane per (i, j) summing k in order, then writes c[i][j] to out[j*ldo+i] for")
p("// j < nt. The k loop is unrolled 4 times; a weight element is broadcast to")
p("// all lanes and multiplied into the tile's token vectors (the BLIS micro-")
p("// kernel shape: Van Zee & van de Geijn, \"BLIS: A Framework for Rapidly")
p("// Instantiating BLAS Functionality\", 2015; Goto & van de Geijn 2008).")
p("// Rows are addressed as base+{0,1,2}·ldw from SI, R10, R11, R12 (rows 0, 3, 6, 9).")
p()
kernel("gemm12x32AVX512", 12, 2, True)
kernel("gemm12x16AVX512", 12, 1, True)
kernel("gemm6x16AVX2", 6, 2, False)
kernel("gemm12x8AVX2", 12, 1, False)
sys.stdout.write("\n".join(out))

pk = r'''
// func gemmPack8AVX2(dst *float32, pw int, src *float32, cols, nk int)
// Packs 8 tokens (src rows cols apart) × 8·nk columns into a panel pw wide:
// dst[k*pw+j] = src[j*cols+k], one 8×8 transpose (unpack, shuffle, 128-bit
// permute) per 8 columns.
TEXT ·gemmPack8AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ pw+8(FP), DX
	SHLQ $2, DX
	LEAQ (DX)(DX*2), R11
	MOVQ src+16(FP), SI
	MOVQ cols+24(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R10
	MOVQ nk+32(FP), CX
	TESTQ CX, CX
	JZ   pack_done

pack_loop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	VMOVUPS (R10), Y4
	VMOVUPS (R10)(R8*1), Y5
	VMOVUPS (R10)(R8*2), Y6
	VMOVUPS (R10)(R9*1), Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	LEAQ (DI)(DX*4), R12
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(DX*1)
	VMOVUPS Y10, (DI)(DX*2)
	VMOVUPS Y11, (DI)(R11*1)
	VMOVUPS Y12, (R12)
	VMOVUPS Y13, (R12)(DX*1)
	VMOVUPS Y14, (R12)(DX*2)
	VMOVUPS Y15, (R12)(R11*1)
	LEAQ (R12)(DX*4), DI
	ADDQ $32, SI
	ADDQ $32, R10
	DECQ CX
	JNZ  pack_loop

pack_done:
	VZEROUPPER
	RET
'''
sys.stdout.write(pk)
