# Generates lut4_amd64.s: python3 lut4_gen.py > lut4_amd64.s (see lut4.go).
#
# 4-bit codes (two per byte, low nibble first) looked up in 16 levels scaled
# by the group's scale, times float32 activations, in matVecAVX2's float
# order (8 lanes per row, FMA, 8 columns at a time, cols%8 tail lanes, HSUM).
#
# Row and x pointers point at the end of the rows' whole 32-column chunks
# (16 bytes each); AX counts the chunk bytes up from -16·n32 to 0, so x
# sits at (BX)(AX*8). Then come (cols%32)/8 steps of 8 columns (4 bytes) and
# a tail of k = cols%8 columns whose bytes are the top of a 4-byte load
# ending at the row's last byte (l4Args.tailOff, .tailShift). Every group
# (a multiple of 32 columns) starts a chunk or the steps after the chunks:
# the scaled tables are rebuilt when the group counter R11 runs out.
#
# AVX2: one row per ymm, levels·scale in two ymm (codes 0-7, 8-15), looked
# up by VPERMPS in both and VBLENDVPS on the code's bit 3. AVX-512: rows A
# and B in the two halves of a zmm, codes of B offset by 16, one VPERMI2PS
# over [levels·scale_A, levels·scale_B].
import sys

from asmgen import out, p, hsum, bytes_const, header


ARGS = ("out *float32, w *byte, scale *float32, lut *[16]float32, x *float32, rows int, a *l4Args")
TILEARGS = ("out *float32, w *byte, scale *float32, lut *[16]float32, x *float32, a *l4Args")

lbl_n = [0]


def lbl(base):
    lbl_n[0] += 1
    return f"{base}{lbl_n[0]}"


# ---------------------------------------------------------------- AVX2


def look2(xi, tlo, thi):
    """8 code bytes in the low half of xi -> Y12 = their scaled levels."""
    p(f"\tVPMOVZXBD {xi}, Y9")
    p(f"\tVPERMPS   {tlo}, Y9, Y12")
    p(f"\tVPERMPS   {thi}, Y9, Y13")
    p("\tVPSLLD    $28, Y9, Y9")
    p("\tVBLENDVPS Y9, Y13, Y12, Y12")


def split16(mem):
    """16 bytes at mem -> X11 = codes 0-15, X10 = codes 16-31 (one per byte)."""
    p(f"\tVMOVDQU    {mem}, X9")
    p("\tVPSRLW     $4, X9, X10")
    p("\tVPAND      X15, X9, X9")
    p("\tVPAND      X15, X10, X10")
    p("\tVPUNPCKLBW X10, X9, X11")
    p("\tVPUNPCKHBW X10, X9, X10")


def split4(load):
    """4 bytes -> X11 = 8 codes. load emits the instructions that put them in X9."""
    load()
    p("\tVPSRLW     $4, X9, X10")
    p("\tVPAND      X15, X9, X9")
    p("\tVPAND      X15, X10, X10")
    p("\tVPUNPCKLBW X10, X9, X11")


def chunk32_avx2(row, tlo, thi, fmas):
    """fmas(k) emits the FMAs of Y12 (values of columns 8k..8k+7)."""
    split16(f"({row})(AX*1)")
    for k in range(4):
        src = "X11" if k < 2 else "X10"
        if k % 2 == 1:
            p(f"\tVPSRLDQ   $8, {src}, {src}")
        look2(src, tlo, thi)
        fmas(k)


def tables_avx2(pairs):
    """pairs: [(scale address, tlo, thi)]; then CX += 4, R11 = gch."""
    for addr, tlo, thi in pairs:
        p(f"\tVBROADCASTSS {addr}, Y8")
        p(f"\tVMULPS       Y6, Y8, {tlo}")
        p(f"\tVMULPS       Y7, Y8, {thi}")
    p("\tADDQ         $4, CX")
    p("\tMOVQ         16(R9), R11")


def maybe_tables_avx2(pairs):
    skip = lbl("l4t")
    p("\tTESTQ R11, R11")
    p(f"\tJNZ   {skip}")
    tables_avx2(pairs)
    p(f"{skip}:")


def matvec_avx2():
    name = "l4MatVecAVX2"
    p(f"// func {name}({ARGS})")
    p("// Rows in pairs (A in SI, B in R8 with scales at R12, R13), a last odd row")
    p("// paired with itself. R9 = a, CX = scale offset, R11 = chunks left in the")
    p("// group, Y0 Y1 accumulators, Y2 Y3 (Y4 Y5) row A's (B's) scaled levels,")
    p("// Y6 Y7 the levels, Y14 the tail lane mask, Y15 0x0f.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-56")
    p("\tMOVQ    out+0(FP), DI")
    p("\tMOVQ    lut+24(FP), AX")
    p("\tVMOVUPS (AX), Y6")
    p("\tVMOVUPS 32(AX), Y7")
    p("\tMOVQ    a+48(FP), R9")
    p("\tMOVQ    24(R9), AX")
    p("\tSHLQ    $4, AX")
    p("\tMOVQ    w+8(FP), SI")
    p("\tADDQ    AX, SI")
    p("\tMOVQ    x+32(FP), BX")
    p("\tLEAQ    (BX)(AX*8), BX")
    p("\tMOVQ    scale+16(FP), R12")
    p("\tMOVQ    rows+40(FP), DX")
    bytes_const("0x0f0f0f0f", "X15", "Y15", "R11")
    p("\tMOVQ    40(R9), AX")
    p("\tTESTQ   AX, AX")
    p(f"\tJZ      {name}_pair")
    p("\tLEAQ    l4tail<>+32(SB), R10")
    p("\tSHLQ    $2, AX")
    p("\tSUBQ    AX, R10")
    p("\tVMOVDQU (R10), Y14")
    p()
    p(f"{name}_pair:")
    p("\tTESTQ DX, DX")
    p(f"\tJZ    {name}_done")
    p("\tMOVQ  SI, R8")
    p("\tMOVQ  R12, R13")
    p("\tCMPQ  DX, $1")
    p(f"\tJE    {name}_one")
    p("\tADDQ  (R9), R8")
    p("\tADDQ  8(R9), R13")
    p(f"{name}_one:")
    p("\tVXORPS Y0, Y0, Y0")
    p("\tVXORPS Y1, Y1, Y1")
    p("\tXORQ   CX, CX")
    p("\tXORQ   R11, R11")
    p("\tMOVQ   24(R9), AX")
    p("\tSHLQ   $4, AX")
    p("\tNEGQ   AX")
    p(f"\tJZ     {name}_rest8")
    tabs = [("(R12)(CX*1)", "Y2", "Y3"), ("(R13)(CX*1)", "Y4", "Y5")]
    p(f"{name}_chunk:")
    maybe_tables_avx2(tabs)
    p("\tDECQ R11")
    for row, tlo, thi, acc in [("SI", "Y2", "Y3", "Y0"), ("R8", "Y4", "Y5", "Y1")]:
        chunk32_avx2(row, tlo, thi, lambda k, acc=acc: p(f"\tVFMADD231PS {32*k}(BX)(AX*8), Y12, {acc}"))
    p("\tADDQ $16, AX")
    p(f"\tJNZ  {name}_chunk")
    p()
    p(f"{name}_rest8:")
    p("\tMOVQ  32(R9), R10")
    p("\tTESTQ R10, R10")
    p(f"\tJZ    {name}_tailk")
    maybe_tables_avx2(tabs)
    p(f"{name}_step8:")
    for row, tlo, thi, acc in [("SI", "Y2", "Y3", "Y0"), ("R8", "Y4", "Y5", "Y1")]:
        split4(lambda row=row: p(f"\tVMOVD      ({row})(AX*1), X9"))
        look2("X11", tlo, thi)
        p(f"\tVFMADD231PS (BX)(AX*8), Y12, {acc}")
    p("\tADDQ $4, AX")
    p("\tDECQ R10")
    p(f"\tJNZ  {name}_step8")
    p()
    p(f"{name}_tailk:")
    p("\tCMPQ 40(R9), $0")
    p(f"\tJE   {name}_store")
    maybe_tables_avx2(tabs)
    p("\tMOVQ       48(R9), R10")
    p("\tMOVQ       56(R9), CX")
    p("\tVMASKMOVPS (BX)(AX*8), Y14, Y8")
    for row, tlo, thi, acc in [("SI", "Y2", "Y3", "Y0"), ("R8", "Y4", "Y5", "Y1")]:
        def ld(row=row):
            p(f"\tMOVL       ({row})(R10*1), R11")
            p("\tSHRL       CX, R11")
            p("\tVMOVD      R11, X9")
        split4(ld)
        look2("X11", tlo, thi)
        p("\tVANDPS      Y14, Y12, Y12")
        p(f"\tVFMADD231PS Y8, Y12, {acc}")
    p()
    p(f"{name}_store:")
    hsum("Y0", "X0", "X8")
    p("\tVMOVSS X0, (DI)")
    p("\tCMPQ   DX, $1")
    p(f"\tJE     {name}_done")
    hsum("Y1", "X1", "X8")
    p("\tVMOVSS X1, 4(DI)")
    p("\tADDQ   $8, DI")
    p("\tMOVQ   (R9), R10")
    p("\tLEAQ   (SI)(R10*2), SI")
    p("\tMOVQ   8(R9), R10")
    p("\tLEAQ   (R12)(R10*2), R12")
    p("\tSUBQ   $2, DX")
    p(f"\tJMP    {name}_pair")
    p()
    p(f"{name}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def tile_avx2():
    name = "l4Tile1x4AVX2"
    p(f"// func {name}({TILEARGS})")
    p("// One row × tokens 0-3 (x rows cols floats apart): out[t*ldo]. cols is a")
    p("// positive multiple of 32. Y0-Y3 accumulators, Y4 Y5 the scaled levels.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-48")
    p("\tMOVQ    lut+24(FP), AX")
    p("\tVMOVUPS (AX), Y6")
    p("\tVMOVUPS 32(AX), Y7")
    p("\tMOVQ    a+40(FP), R9")
    p("\tMOVQ    24(R9), AX")
    p("\tSHLQ    $4, AX")
    p("\tMOVQ    w+8(FP), SI")
    p("\tADDQ    AX, SI")
    p("\tMOVQ    72(R9), DX")
    p("\tSHLQ    $2, DX")
    p("\tMOVQ    x+32(FP), BX")
    p("\tLEAQ    (BX)(AX*8), BX")
    p("\tLEAQ    (BX)(DX*1), R8")
    p("\tLEAQ    (R8)(DX*1), R10")
    p("\tLEAQ    (R10)(DX*1), R13")
    p("\tMOVQ    scale+16(FP), R12")
    bytes_const("0x0f0f0f0f", "X15", "Y15", "R11")
    for i in range(4):
        p(f"\tVXORPS Y{i}, Y{i}, Y{i}")
    p("\tXORQ   CX, CX")
    p("\tXORQ   R11, R11")
    p("\tNEGQ   AX")
    p(f"{name}_chunk:")
    maybe_tables_avx2([("(R12)(CX*1)", "Y4", "Y5")])
    p("\tDECQ R11")
    toks = ["BX", "R8", "R10", "R13"]
    chunk32_avx2("SI", "Y4", "Y5", lambda k: [p(f"\tVFMADD231PS {32*k}({t})(AX*8), Y12, Y{j}") for j, t in enumerate(toks)])
    p("\tADDQ $16, AX")
    p(f"\tJNZ  {name}_chunk")
    for i in range(4):
        hsum(f"Y{i}", f"X{i}", "X8")
    p("\tMOVQ   out+0(FP), DI")
    p("\tMOVQ   64(R9), DX")
    p("\tSHLQ   $2, DX")
    p("\tLEAQ   (DX)(DX*2), R13")
    for j, a in enumerate(["(DI)", "(DI)(DX*1)", "(DI)(DX*2)", "(DI)(R13*1)"]):
        p(f"\tVMOVSS X{j}, {a}")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


# ---------------------------------------------------------------- AVX-512


def idx16_from_x11():
    """X11 = [A codes 0-7 | B codes 0-7] -> Z12 lookup indices (B + 16)."""
    p("\tVPOR        l4off8<>(SB), X11, X11")
    p("\tVPMOVZXBD   X11, Z12")


def chunk32_pair(a, b, ta, tb, fmas):
    """Rows a, b: 16 bytes each -> four Z12 lookups, fmas(k) after each."""
    p(f"\tVMOVDQU     ({a})(AX*1), X9")
    p(f"\tVINSERTI128 $1, ({b})(AX*1), Y9, Y9")
    p("\tVPSRLW      $4, Y9, Y10")
    p("\tVPAND       Y15, Y9, Y9")
    p("\tVPAND       Y15, Y10, Y10")
    p("\tVPUNPCKLBW  Y10, Y9, Y11")
    p("\tVPUNPCKHBW  Y10, Y9, Y10")
    p("\tVPOR        Y14, Y11, Y11")
    p("\tVPOR        Y14, Y10, Y10")
    p("\tVPERMQ      $0xd8, Y11, Y11")
    p("\tVPERMQ      $0xd8, Y10, Y10")
    for k in range(4):
        src = "11" if k < 2 else "10"
        if k % 2 == 1:
            p(f"\tVEXTRACTI128 $1, Y{src}, X{src}")
        p(f"\tVPMOVZXBD   X{src}, Z12")
        p(f"\tVPERMI2PS   {tb}, {ta}, Z12")
        fmas(k)


def pair4(load_a, load_b):
    """4 bytes of row a (via load_a into X9) and b -> X11 = [A 8 codes | B 8 codes]."""
    load_a()
    load_b()
    p("\tVPSRLW      $4, X9, X10")
    p("\tVPAND       X15, X9, X9")
    p("\tVPAND       X15, X10, X10")
    p("\tVPUNPCKLBW  X10, X9, X11")
    p("\tVPUNPCKHBW  X10, X9, X10")
    p("\tVPUNPCKLQDQ X10, X11, X11")


def tables_avx512(pairs):
    """pairs: [(scale addr A, scale addr B, ta, tb)], with R14 computed as
    needed by pre(); then CX += 4, R11 = gch."""
    for pre, addr, t in pairs:
        if pre:
            p(pre)
        p(f"\tVBROADCASTSS {addr}, Z7")
        p(f"\tVMULPS       Z6, Z7, {t}")
    p("\tADDQ         $4, CX")
    p("\tMOVQ         a+48(FP), R11")
    p("\tMOVQ         16(R11), R11")


def maybe_tables_avx512(pairs):
    skip = lbl("l4z")
    p("\tTESTQ R11, R11")
    p(f"\tJNZ   {skip}")
    tables_avx512(pairs)
    p(f"{skip}:")


def matvec_avx512():
    name = "l4MatVecAVX512"
    p(f"// func {name}({ARGS})")
    p("// Rows four at a time as two zmm pairs (A B in SI R8, C D in R9 R10), then")
    p("// a pair, then a last row paired with itself. R12 = row A's scales, R13 =")
    p("// scale bytes per row, CX = scale offset, R11 = chunks left in the group;")
    p("// Z0 Z1 accumulators, Z2 Z3 (Z4 Z5) the scaled levels of A B (C D), Z6 the")
    p("// levels, Z16-Z19 x, Y14 the B offset 16, Y15 0x0f, Z8 K1 K2 the tail.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-56")
    p("\tMOVQ    out+0(FP), DI")
    p("\tMOVQ    lut+24(FP), AX")
    p("\tVMOVUPS (AX), Z6")
    p("\tMOVQ    a+48(FP), R14")
    p("\tMOVQ    24(R14), AX")
    p("\tSHLQ    $4, AX")
    p("\tMOVQ    w+8(FP), SI")
    p("\tADDQ    AX, SI")
    p("\tMOVQ    x+32(FP), BX")
    p("\tLEAQ    (BX)(AX*8), BX")
    p("\tMOVQ    scale+16(FP), R12")
    p("\tMOVQ    8(R14), R13")
    p("\tMOVQ    rows+40(FP), DX")
    bytes_const("0x0f0f0f0f", "X15", "Y15", "R11")
    p("\tVMOVDQU l4off16<>(SB), Y14")
    p("\tMOVQ    40(R14), AX")
    p("\tLEAQ    l4kmask<>(SB), R11")
    p("\tMOVWLZX (R11)(AX*2), R11")
    p("\tKMOVW   R11, K1")
    p("\tKSHIFTLW $8, K1, K2")
    p("\tKORW    K1, K2, K2")
    p()
    blocks = [
        ("block4", 4, [("SI", "R8", "Z2", "Z3", "Z0"), ("R9", "R10", "Z4", "Z5", "Z1")]),
        ("block2", 2, [("SI", "R8", "Z2", "Z3", "Z0")]),
        ("block1", 1, [("SI", "SI", "Z2", "Z3", "Z0")]),
    ]
    for bi, (bl, nr, pairs) in enumerate(blocks):
        nxt = blocks[bi + 1][0] if bi + 1 < len(blocks) else "done"
        pre = f"{name}_{bl}"
        p(f"{pre}:")
        p(f"\tCMPQ DX, ${nr}")
        p(f"\tJLT  {name}_{nxt}")
        p("\tMOVQ a+48(FP), R14")
        p("\tMOVQ (R14), R14")
        if nr >= 2:
            p("\tLEAQ (SI)(R14*1), R8")
        if nr == 4:
            p("\tLEAQ (R8)(R14*1), R9")
            p("\tLEAQ (R9)(R14*1), R10")
        if nr == 4:
            tabs = [(None, "(R12)(CX*1)", "Z2"), ("\tLEAQ (R12)(R13*1), R14", "(R14)(CX*1)", "Z3"),
                    ("\tLEAQ (R14)(R13*1), R14", "(R14)(CX*1)", "Z4"), ("\tADDQ R13, R14", "(R14)(CX*1)", "Z5")]
        elif nr == 2:
            tabs = [(None, "(R12)(CX*1)", "Z2"), ("\tLEAQ (R12)(R13*1), R14", "(R14)(CX*1)", "Z3")]
        else:
            tabs = [(None, "(R12)(CX*1)", "Z2"), (None, "(R12)(CX*1)", "Z3")]
        for *_, acc in pairs:
            y = "Y" + acc[1:]
            p(f"\tVXORPS {y}, {y}, {y}")
        p("\tXORQ CX, CX")
        p("\tXORQ R11, R11")
        p("\tMOVQ a+48(FP), AX")
        p("\tMOVQ 24(AX), AX")
        p("\tSHLQ $4, AX")
        p("\tNEGQ AX")
        p(f"\tJZ   {pre}_rest8")
        p(f"{pre}_chunk:")
        maybe_tables_avx512(tabs)
        p("\tDECQ R11")
        for k in range(4):
            p(f"\tVBROADCASTF32X8 {32*k}(BX)(AX*8), Z{16+k}")
        for a, b, ta, tb, acc in pairs:
            chunk32_pair(a, b, ta, tb, lambda k, acc=acc: p(f"\tVFMADD231PS Z{16+k}, Z12, {acc}"))
        p("\tADDQ $16, AX")
        p(f"\tJNZ  {pre}_chunk")
        p()
        p(f"{pre}_rest8:")
        p("\tMOVQ  a+48(FP), R14")
        p("\tMOVQ  32(R14), R14")
        p("\tTESTQ R14, R14")
        p(f"\tJZ    {pre}_tailk")
        maybe_tables_avx512(tabs)
        p("\tMOVQ  a+48(FP), R14")
        p("\tMOVQ  32(R14), R14")
        p(f"{pre}_step8:")
        p("\tVBROADCASTF32X8 (BX)(AX*8), Z16")
        for a, b, ta, tb, acc in pairs:
            pair4(lambda a=a: p(f"\tVMOVD       ({a})(AX*1), X9"),
                  lambda b=b: p(f"\tVPINSRD     $2, ({b})(AX*1), X9, X9"))
            idx16_from_x11()
            p(f"\tVPERMI2PS   {tb}, {ta}, Z12")
            p(f"\tVFMADD231PS Z16, Z12, {acc}")
        p("\tADDQ $4, AX")
        p("\tDECQ R14")
        p(f"\tJNZ  {pre}_step8")
        p()
        p(f"{pre}_tailk:")
        p("\tMOVQ a+48(FP), R14")
        p("\tCMPQ 40(R14), $0")
        p(f"\tJE   {pre}_store")
        maybe_tables_avx512(tabs)
        p("\tVMOVUPS.Z    (BX)(AX*8), K1, Y8")
        p("\tVINSERTF32X8 $1, Y8, Z8, Z8")
        p("\tMOVQ a+48(FP), R14")
        p("\tMOVQ 56(R14), CX")
        p("\tMOVQ 48(R14), R14")
        for a, b, ta, tb, acc in pairs:
            def la(a=a):
                p(f"\tMOVL        ({a})(R14*1), R11")
                p("\tSHRL        CX, R11")
                p("\tVMOVD       R11, X9")

            def lb(b=b):
                p(f"\tMOVL        ({b})(R14*1), R11")
                p("\tSHRL        CX, R11")
                p("\tVPINSRD     $2, R11, X9, X9")
            pair4(la, lb)
            idx16_from_x11()
            p(f"\tVPERMI2PS.Z {tb}, {ta}, K2, Z12")
            p(f"\tVFMADD231PS Z8, Z12, {acc}")
        p()
        p(f"{pre}_store:")
        for k, (a, b, ta, tb, acc) in enumerate(pairs):
            n = acc[1:]
            if nr > 1:
                p(f"\tVEXTRACTF32X8 $1, {acc}, Y7")
            hsum("Y" + n, "X" + n, "X13")
            p(f"\tVMOVSS X{n}, {8*k}(DI)")
            if nr > 1:
                hsum("Y7", "X7", "X13")
                p(f"\tVMOVSS X7, {8*k+4}(DI)")
        p(f"\tADDQ ${4*nr}, DI")
        p("\tMOVQ a+48(FP), R14")
        p("\tMOVQ (R14), R14")
        last = {4: "R10", 2: "R8", 1: "SI"}[nr]
        p(f"\tLEAQ ({last})(R14*1), SI")
        for _ in range(nr):
            p("\tADDQ R13, R12")
        p(f"\tSUBQ ${nr}, DX")
        p(f"\tJMP  {pre}")
        p()
    p(f"{name}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def tile_avx512():
    name = "l4Tile2x4AVX512"
    p(f"// func {name}({TILEARGS})")
    p("// Rows 0 and 1 (one zmm pair) × tokens 0-3: out[t*ldo+r]. cols is a")
    p("// positive multiple of 32. Z20-Z23 accumulators, Z2 Z3 the scaled levels.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-48")
    p("\tMOVQ    lut+24(FP), AX")
    p("\tVMOVUPS (AX), Z6")
    p("\tMOVQ    a+40(FP), R14")
    p("\tMOVQ    24(R14), AX")
    p("\tSHLQ    $4, AX")
    p("\tMOVQ    w+8(FP), SI")
    p("\tLEAQ    (SI)(AX*1), SI")
    p("\tMOVQ    (R14), R8")
    p("\tADDQ    SI, R8")
    p("\tMOVQ    72(R14), DX")
    p("\tSHLQ    $2, DX")
    p("\tMOVQ    x+32(FP), BX")
    p("\tLEAQ    (BX)(AX*8), BX")
    p("\tLEAQ    (BX)(DX*1), R9")
    p("\tLEAQ    (R9)(DX*1), R10")
    p("\tLEAQ    (R10)(DX*1), R13")
    p("\tMOVQ    scale+16(FP), R12")
    p("\tMOVQ    8(R14), R14")
    p("\tADDQ    R12, R14")
    bytes_const("0x0f0f0f0f", "X15", "Y15", "R11")
    p("\tVMOVDQU l4off16<>(SB), Y14")
    for i in range(20, 24):
        p(f"\tVPXORD Z{i}, Z{i}, Z{i}")
    p("\tXORQ   CX, CX")
    p("\tXORQ   R11, R11")
    p("\tNEGQ   AX")
    p(f"{name}_chunk:")
    skip = lbl("l4z")
    p("\tTESTQ R11, R11")
    p(f"\tJNZ   {skip}")
    p("\tVBROADCASTSS (R12)(CX*1), Z7")
    p("\tVMULPS       Z6, Z7, Z2")
    p("\tVBROADCASTSS (R14)(CX*1), Z7")
    p("\tVMULPS       Z6, Z7, Z3")
    p("\tADDQ         $4, CX")
    p("\tMOVQ         a+40(FP), R11")
    p("\tMOVQ         16(R11), R11")
    p(f"{skip}:")
    p("\tDECQ R11")
    toks = ["BX", "R9", "R10", "R13"]

    def fmas(k):
        for j, t in enumerate(toks):
            p(f"\tVBROADCASTF32X8 {32*k}({t})(AX*8), Z{16+j}")
        for j in range(4):
            p(f"\tVFMADD231PS Z{16+j}, Z12, Z{20+j}")
    chunk32_pair("SI", "R8", "Z2", "Z3", fmas)
    p("\tADDQ $16, AX")
    p(f"\tJNZ  {name}_chunk")
    p("\tMOVQ   out+0(FP), DI")
    p("\tMOVQ   a+40(FP), DX")
    p("\tMOVQ   64(DX), DX")
    p("\tSHLQ   $2, DX")
    p("\tLEAQ   (DX)(DX*2), R13")
    for j, a in enumerate(["(DI)", "(DI)(DX*1)", "(DI)(DX*2)", "(DI)(R13*1)"]):
        p(f"\tVEXTRACTF32X8 $1, Z{20+j}, Y7")
        p(f"\tVMOVAPS       Y{20+j}, Y6")
        hsum("Y6", "X6", "X13")
        hsum("Y7", "X7", "X13")
        p(f"\tVMOVSS X6, {a}")
        p(f"\tVMOVSS X7, 4{a}")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


header("lut4_gen.py", "lut4_amd64.s")
p("// 4-bit codes × float32 activations through 16 scaled levels; see")
p("// lut4_gen.py for the loops and lut4.go for the layout.")
p()
p("// l4tail<>: 8 all-ones lanes then 8 zero lanes; the 8 at +32-4k mask the")
p("// first k.")
for i in range(4):
    p(f"DATA l4tail<>+{8*i}(SB)/8, $0xffffffffffffffff")
for i in range(4, 8):
    p(f"DATA l4tail<>+{8*i}(SB)/8, $0")
p("GLOBL l4tail<>(SB), RODATA|NOPTR, $64")
p()
p("// l4off16<>: 16 zero bytes then 16 bytes of 16, the lookup offset of row B")
p("// in the high lane; l4off8<>: the same for one xmm of 8 + 8 codes.")
p("DATA l4off16<>+0(SB)/8, $0")
p("DATA l4off16<>+8(SB)/8, $0")
p("DATA l4off16<>+16(SB)/8, $0x1010101010101010")
p("DATA l4off16<>+24(SB)/8, $0x1010101010101010")
p("GLOBL l4off16<>(SB), RODATA|NOPTR, $32")
p("DATA l4off8<>+0(SB)/8, $0")
p("DATA l4off8<>+8(SB)/8, $0x1010101010101010")
p("GLOBL l4off8<>(SB), RODATA|NOPTR, $16")
p()
p("// l4kmask<>: word k is (1<<k)-1, an opmask for the first k lanes.")
for k in range(8):
    p(f"DATA l4kmask<>+{2*k}(SB)/2, $0x{(1 << k) - 1:04x}")
p("GLOBL l4kmask<>(SB), RODATA|NOPTR, $16")
p()
matvec_avx2()
tile_avx2()
matvec_avx512()
tile_avx512()
sys.stdout.write("\n".join(out) + "\n")
