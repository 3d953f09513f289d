# Generates qf_amd64.s: python3 qf_gen.py > qf_amd64.s (see qf.go).
#
# Quantized weights × float32 activations, the weights dequantized in
# registers. Two families share every loop and differ in the decode step:
#
#   e4m3, e5m2: 8-bit codes widened to IEEE halves (E4M3: sign-extend, <<7,
#          keep the sign and 7 low bits; E5M2: <<8), VCVTPH2PS, times
#          scale·factor (fp8Params);
#   i8f32: int8 codes, VPMOVSXBD + VCVTDQ2PS, times scale.
#
# Each output keeps matVecAVX2's float order: one 8-lane FMA accumulator per
# (row, token), 8 columns at a time, the last cols%8 columns as lanes 0..k-1
# with +0 in the others, then HSUM. The AVX-512 kernels hold two rows in one
# zmm (lanes 0-7 and 8-15) against the same 8 activations broadcast to both
# halves, so each row still has its own 8 lanes in the same order.
import sys

from asmgen import out, p, hsum, header


FAMS = {
    "e4m3": dict(args=", p *fp8Params", frame=56, tileframe=56),
    "e5m2": dict(args=", p *fp8Params", frame=56, tileframe=56),
    "i8f32": dict(args="", frame=48, tileframe=48),
}


def isfp8(fam):
    return fam != "i8f32"


def params_avx2(fam, factor_reg):
    if isfp8(fam):
        p("\tMOVQ         p+48(FP), R13")
        p("\tVPBROADCASTW 8(R13), Y11")
        p(f"\tVBROADCASTSS 16(R13), {factor_reg}")


def params_avx512(fam):
    if isfp8(fam):
        p("\tMOVQ         p+48(FP), R13")
        p("\tVPBROADCASTW 8(R13), Z11")
        p("\tVBROADCASTSS 16(R13), Z12")


def dec8(fam, mem, sc):
    """8 codes at mem -> Y9 = value·scale (AVX2)."""
    if fam == "e4m3":
        p(f"\tVPMOVSXBW {mem}, X9")
        p("\tVPSLLW    $7, X9, X9")
        p("\tVPAND     X11, X9, X9")
        p("\tVCVTPH2PS X9, Y9")
    elif fam == "e5m2":
        p(f"\tVPMOVSXBW {mem}, X9")
        p("\tVPSLLW    $8, X9, X9")
        p("\tVCVTPH2PS X9, Y9")
    else:
        p(f"\tVPMOVSXBD {mem}, Y9")
        p("\tVCVTDQ2PS Y9, Y9")
    p(f"\tVMULPS    {sc}, Y9, Y9")


def dec16(fam):
    """X6 = 8 codes of row A | 8 of row B -> Z6 values (AVX-512)."""
    if fam == "e4m3":
        p("\tVPMOVSXBW X6, Y6")
        p("\tVPSLLW    $7, Y6, Y6")
        p("\tVPAND     Y11, Y6, Y6")
        p("\tVCVTPH2PS Y6, Z6")
    elif fam == "e5m2":
        p("\tVPMOVSXBW X6, Y6")
        p("\tVPSLLW    $8, Y6, Y6")
        p("\tVCVTPH2PS Y6, Z6")
    else:
        p("\tVPMOVSXBD X6, Z6")
        p("\tVCVTDQ2PS Z6, Z6")


def tail_setup_avx2():
    # Y14: VPERMD indices moving the last k of 8 lanes to 0..k-1;
    # Y15: float mask of lanes 0..k-1. AX = k on entry; clobbers R13, R14.
    p("\tLEAQ    qfperm<>-32(SB), R13")
    p("\tMOVQ    AX, R14")
    p("\tSHLQ    $5, R14")
    p("\tVMOVDQU (R13)(R14*1), Y14")
    p("\tLEAQ    qftail<>+32(SB), R13")
    p("\tSHLQ    $2, AX")
    p("\tSUBQ    AX, R13")
    p("\tVMOVDQU (R13), Y15")


def matvec_avx2(fam):
    f = FAMS[fam]
    name = f"{fam}MatVecAVX2"
    fac = "Y12"
    p(f"// func {name}(out *float32, w *byte, scale, x *float32, rows, cols int{f['args']})")
    p("// out[r] = Σ_c value(w[r*cols+c])·x[c]; cols >= 8. Four rows at a time share")
    p("// each x load, then one at a time.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-{f['frame']}")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ scale+16(FP), R12")
    p("\tMOVQ x+24(FP), BX")
    p("\tMOVQ rows+32(FP), DX")
    p("\tMOVQ cols+40(FP), CX")
    params_avx2(fam, fac)
    p("\tMOVQ CX, R11")
    p("\tANDQ $-8, R11")
    p("\tMOVQ CX, AX")
    p("\tANDQ $7, AX")
    p(f"\tJZ   {name}_block4")
    tail_setup_avx2()
    p()
    p(f"{name}_block4:")
    p("\tCMPQ DX, $4")
    p(f"\tJLT  {name}_block1")
    p("\tLEAQ (SI)(CX*1), R8")
    p("\tLEAQ (R8)(CX*1), R9")
    p("\tLEAQ (R9)(CX*1), R10")
    for i in range(4):
        p(f"\tVBROADCASTSS {4*i}(R12), Y{4+i}")
        if isfp8(fam):
            p(f"\tVMULPS       {fac}, Y{4+i}, Y{4+i}")
    for i in range(4):
        p(f"\tVXORPS Y{i}, Y{i}, Y{i}")
    p("\tXORQ   AX, AX")
    p()
    p(f"{name}_loop4:")
    p("\tVMOVUPS     (BX)(AX*4), Y8")
    for i, r in enumerate(["SI", "R8", "R9", "R10"]):
        dec8(fam, f"({r})(AX*1)", f"Y{4+i}")
        p(f"\tVFMADD231PS Y8, Y9, Y{i}")
    p("\tADDQ        $8, AX")
    p("\tCMPQ        AX, R11")
    p(f"\tJLT         {name}_loop4")
    p("\tTESTQ $7, CX")
    p(f"\tJZ    {name}_store4")
    p("\tVMASKMOVPS (BX)(AX*4), Y15, Y8")
    for i, r in enumerate(["SI", "R8", "R9", "R10"]):
        dec8(fam, f"-8({r})(CX*1)", f"Y{4+i}")
        p("\tVPERMD      Y9, Y14, Y9")
        p("\tVANDPS      Y15, Y9, Y9")
        p(f"\tVFMADD231PS Y8, Y9, Y{i}")
    p()
    p(f"{name}_store4:")
    for i in range(4):
        hsum(f"Y{i}", f"X{i}", "X8")
    for i in range(4):
        p(f"\tVMOVSS X{i}, {4*i}(DI)")
    p("\tADDQ   $16, DI")
    p("\tADDQ   $16, R12")
    p("\tLEAQ   (R10)(CX*1), SI")
    p("\tSUBQ   $4, DX")
    p(f"\tJMP    {name}_block4")
    p()
    p(f"{name}_block1:")
    p("\tTESTQ DX, DX")
    p(f"\tJZ    {name}_done")
    p("\tVBROADCASTSS (R12), Y4")
    if isfp8(fam):
        p(f"\tVMULPS       {fac}, Y4, Y4")
    p("\tVXORPS Y0, Y0, Y0")
    p("\tXORQ   AX, AX")
    p()
    p(f"{name}_loop1:")
    p("\tVMOVUPS     (BX)(AX*4), Y8")
    dec8(fam, "(SI)(AX*1)", "Y4")
    p("\tVFMADD231PS Y8, Y9, Y0")
    p("\tADDQ        $8, AX")
    p("\tCMPQ        AX, R11")
    p(f"\tJLT         {name}_loop1")
    p("\tTESTQ $7, CX")
    p(f"\tJZ    {name}_store1")
    p("\tVMASKMOVPS (BX)(AX*4), Y15, Y8")
    dec8(fam, "-8(SI)(CX*1)", "Y4")
    p("\tVPERMD      Y9, Y14, Y9")
    p("\tVANDPS      Y15, Y9, Y9")
    p("\tVFMADD231PS Y8, Y9, Y0")
    p()
    p(f"{name}_store1:")
    hsum("Y0", "X0", "X8")
    p("\tVMOVSS X0, (DI)")
    p("\tADDQ   $4, DI")
    p("\tADDQ   $4, R12")
    p("\tADDQ   CX, SI")
    p("\tDECQ   DX")
    p(f"\tJMP    {name}_block1")
    p()
    p(f"{name}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def dec8t(fam, mem, sc):
    """8 codes at mem -> Y12 = value·scale (the tile's registers; the E4M3
    mask comes from memory)."""
    if fam == "e4m3":
        p(f"\tVPMOVSXBW {mem}, X12")
        p("\tVPSLLW    $7, X12, X12")
        p("\tVPAND     qfe4m3<>(SB), X12, X12")
        p("\tVCVTPH2PS X12, Y12")
    elif fam == "e5m2":
        p(f"\tVPMOVSXBW {mem}, X12")
        p("\tVPSLLW    $8, X12, X12")
        p("\tVCVTPH2PS X12, Y12")
    else:
        p(f"\tVPMOVSXBD {mem}, Y12")
        p("\tVCVTDQ2PS Y12, Y12")
    p(f"\tVMULPS    {sc}, Y12, Y12")


TT = 4  # tokens of the AVX2 tile (6 measured slower: 14 loads per 12 FMAs)


def tile_avx2(fam):
    f = FAMS[fam]
    name = f"{fam}Tile2x{TT}AVX2"
    p(f"// func {name}(out *float32, w *byte, scale, x *float32, cols, ldo int{f['args']})")
    p(f"// Rows 0 and 1 of w (cols bytes apart) × tokens 0-{TT-1} of x (cols floats apart):")
    p(f"// out[t*ldo+r]. Each row's 8 values are dequantized once (Y12) for the {TT}")
    p(f"// tokens, whose x come as FMA memory operands; Y({TT}r+t) accumulates.")
    p("// cols must be a positive multiple of 8.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-{f['tileframe']}")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ scale+16(FP), R12")
    p("\tMOVQ x+24(FP), BX")
    p("\tMOVQ cols+32(FP), CX")
    p("\tVBROADCASTSS (R12), Y13")
    p("\tVBROADCASTSS 4(R12), Y14")
    if isfp8(fam):
        p("\tMOVQ         p+48(FP), R13")
        p("\tVBROADCASTSS 16(R13), Y15")
        p("\tVMULPS       Y15, Y13, Y13")
        p("\tVMULPS       Y15, Y14, Y14")
    p("\tLEAQ (SI)(CX*1), R8")
    p("\tLEAQ (BX)(CX*4), R9")
    p("\tLEAQ (R9)(CX*4), R10")
    p("\tLEAQ (R10)(CX*4), R11")
    p("\tLEAQ (R11)(CX*4), R13")
    p("\tLEAQ (R13)(CX*4), R14")
    for i in range(2 * TT):
        p(f"\tVXORPS Y{i}, Y{i}, Y{i}")
    p("\tXORQ AX, AX")
    p()
    p(f"{name}_loop:")
    toks = ["BX", "R9", "R10", "R11", "R13", "R14"][:TT]
    for i, r in enumerate(["SI", "R8"]):
        dec8t(fam, f"({r})(AX*1)", f"Y{13+i}")
        for j, t in enumerate(toks):
            p(f"\tVFMADD231PS ({t})(AX*4), Y12, Y{TT*i+j}")
    p("\tADDQ $8, AX")
    p("\tCMPQ AX, CX")
    p(f"\tJLT  {name}_loop")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+40(FP), DX")
    p("\tSHLQ $2, DX")
    for j in range(TT):
        for i in range(2):
            hsum(f"Y{TT*i+j}", f"X{TT*i+j}", "X12")
            p(f"\tVMOVSS X{TT*i+j}, {4*i}(DI)")
        p("\tADDQ   DX, DI")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def pair_scale(z, m1, m2):
    p(f"\tVBROADCASTSS  {m1}, {z}")
    p(f"\tVBROADCASTSS  {m2}, Y13")
    p(f"\tVINSERTF32X8  $1, Y13, {z}, {z}")


def pair_step(fam, a, b, zs, za):
    # a, b: the addresses of the pair's two rows at column AX.
    p(f"\tVMOVQ       {a}, X6")
    p(f"\tVPINSRQ     $1, {b}, X6, X6")
    dec16(fam)
    p(f"\tVMULPS      {zs}, Z6, Z6")
    p(f"\tVFMADD231PS Z8, Z6, {za}")


def pair_tail(fam, a, b, zs, za):
    # a, b: the addresses of the pair's two rows' last 8 columns.
    p(f"\tVMOVQ       {a}, X6")
    p(f"\tVPINSRQ     $1, {b}, X6, X6")
    dec16(fam)
    p("\tVPERMD      Z6, Z14, Z6")
    p(f"\tVMULPS      {zs}, Z6, Z6")
    p("\tVANDPS      Z15, Z6, Z6")
    p(f"\tVFMADD231PS Z8, Z6, {za}")


def hsum_pair(za, ya, xa, outs):
    # outs: addresses of row A (low half) and row B (high half), or [A] only.
    if len(outs) > 1:
        p(f"\tVEXTRACTF32X8 $1, {za}, Y7")
    hsum(ya, xa, "X13")
    p(f"\tVMOVSS {xa}, {outs[0]}")
    if len(outs) > 1:
        hsum("Y7", "X7", "X13")
        p(f"\tVMOVSS X7, {outs[1]}")


def pair_block(fam, name, lbl, nxt, nr, setup, pairs, walk, adv):
    # nr rows as zmm pairs sharing each x load, while DX >= nr rows are left;
    # then on to nxt. setup: the lines pointing at the rows; pairs: (step_a,
    # step_b, tail_a, tail_b, zs, za), the pair's two rows at column AX and
    # their last 8 columns, its scales and accumulator; walk: a register
    # moved on with AX (or None); adv: the line moving SI to the next block.
    p(f"{name}_{lbl}:")
    p(f"\tCMPQ DX, ${nr}")
    p(f"\tJLT  {name}_{nxt}")
    for s in setup:
        p(s)
    for k, (_, _, _, _, zs, za) in enumerate(pairs):
        if nr == 1:
            pair_scale(zs, "(R12)", "(R12)")
        else:
            pair_scale(zs, f"{8*k}(R12)", f"{8*k+4}(R12)")
        if isfp8(fam):
            p(f"\tVMULPS        Z12, {zs}, {zs}")
        if int(za[1:]) >= 16:  # Z16-Z31: EVEX only
            p(f"\tVPXORD {za}, {za}, {za}")
        else:
            y = "Y" + za[1:]
            p(f"\tVXORPS {y}, {y}, {y}")
    if walk:
        p(f"\tMOVQ SI, {walk}")
    p("\tXORQ AX, AX")
    p()
    p(f"{name}_{lbl}_loop:")
    p("\tVBROADCASTF32X8 (BX)(AX*4), Z8")
    for a, b, _, _, zs, za in pairs:
        pair_step(fam, a, b, zs, za)
    if walk:
        p(f"\tADDQ $8, {walk}")
    p("\tADDQ $8, AX")
    p("\tCMPQ AX, R11")
    p(f"\tJLT  {name}_{lbl}_loop")
    p("\tTESTQ $7, CX")
    p(f"\tJZ    {name}_{lbl}_store")
    p("\tVMOVUPS.Z     (BX)(AX*4), K1, Y8")
    p("\tVINSERTF32X8  $1, Y8, Z8, Z8")
    for _, _, a, b, zs, za in pairs:
        pair_tail(fam, a, b, zs, za)
    p()
    p(f"{name}_{lbl}_store:")
    for k, (_, _, _, _, zs, za) in enumerate(pairs):
        n = za[1:]
        if nr == 1:
            hsum_pair(za, "Y" + n, "X" + n, ["(DI)"])
        else:
            hsum_pair(za, "Y" + n, "X" + n, [f"{8*k}(DI)", f"{8*k+4}(DI)"])
    p(f"\tADDQ ${4*nr}, DI")
    p(f"\tADDQ ${4*nr}, R12")
    p(adv)
    p(f"\tSUBQ ${nr}, DX")
    p(f"\tJMP  {name}_{lbl}")
    p()


def matvec_avx512(fam):
    f = FAMS[fam]
    name = f"{fam}MatVecAVX512"
    p(f"// func {name}(out *float32, w *byte, scale, x *float32, rows, cols int{f['args']})")
    p("// As the AVX2 kernel with two rows per zmm: eight rows (four zmm) share each")
    p("// x load, then four, two, then a last row paired with itself. cols >= 8.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-{f['frame']}")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ scale+16(FP), R12")
    p("\tMOVQ x+24(FP), BX")
    p("\tMOVQ rows+32(FP), DX")
    p("\tMOVQ cols+40(FP), CX")
    params_avx512(fam)
    p("\tMOVQ CX, R11")
    p("\tANDQ $-8, R11")
    p("\tMOVQ CX, AX")
    p("\tANDQ $7, AX")
    p(f"\tJZ   {name}_block8")
    # Z14 = [perm | perm+8], Z15 = [mask | mask], K1 = first k lanes of 8.
    p("\tLEAQ         qfkmask<>(SB), R13")
    p("\tMOVWLZX      (R13)(AX*2), R14")
    p("\tKMOVW        R14, K1")
    tail_setup_avx2()
    p("\tMOVL         $8, R13")
    p("\tVPBROADCASTD R13, Y13")
    p("\tVPADDD       Y13, Y14, Y13")
    p("\tVINSERTI32X8 $1, Y13, Z14, Z14")
    p("\tVINSERTI32X8 $1, Y15, Z15, Z15")
    p()
    # Eight rows, four zmm pairs: four independent FMA chains (with the two
    # of block4 the loop waits on FMA latency). Row k is (R8)(idx[k]), R8
    # walking row 0 and idx multiples of cols (R13 = 3·cols, R14 = 5·cols,
    # R9 = 7·cols); its last 8 columns are -8(SI)(idx[k+1]).
    idx = ["", "(CX*1)", "(CX*2)", "(R13*1)", "(CX*4)", "(R14*1)", "(R13*2)", "(R9*1)", "(CX*8)"]
    pair_block(fam, name, "block8", "block4", 8,
               ["\tLEAQ (CX)(CX*2), R13", "\tLEAQ (CX)(CX*4), R14", "\tLEAQ (R13)(CX*4), R9"],
               [(f"(R8){idx[2*k]}", f"(R8){idx[2*k+1]}", f"-8(SI){idx[2*k+1]}", f"-8(SI){idx[2*k+2]}",
                 f"Z{20+k}", f"Z{16+k}") for k in range(4)],
               "R8", "\tLEAQ (SI)(CX*8), SI")
    # Four, two and one rows, each row its own register walked by AX.
    blocks = [
        ("block4", 4, [("SI", "R8", "Z4", "Z0"), ("R9", "R10", "Z5", "Z1")],
         ["\tLEAQ (SI)(CX*1), R8", "\tLEAQ (R8)(CX*1), R9", "\tLEAQ (R9)(CX*1), R10"], "R10"),
        ("block2", 2, [("SI", "R8", "Z4", "Z0")], ["\tLEAQ (SI)(CX*1), R8"], "R8"),
        ("block1", 1, [("SI", "SI", "Z4", "Z0")], [], "SI"),
    ]
    for bi, (lbl, nr, pairs, setup, last) in enumerate(blocks):
        nxt = blocks[bi + 1][0] if bi + 1 < len(blocks) else "done"
        pair_block(fam, name, lbl, nxt, nr, setup,
                   [(f"({a})(AX*1)", f"({b})(AX*1)", f"-8({a})(CX*1)", f"-8({b})(CX*1)", zs, za)
                    for a, b, zs, za in pairs],
                   None, f"\tLEAQ ({last})(CX*1), SI")
    p(f"{name}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def tile_avx512(fam):
    f = FAMS[fam]
    name = f"{fam}Tile4x4AVX512"
    p(f"// func {name}(out *float32, w *byte, scale, x *float32, cols, ldo int{f['args']})")
    p("// Rows 0-3 of w (two zmm pairs) × tokens 0-3 of x: out[t*ldo+r]. Accumulator")
    p("// for pair q, token t is Z(16+4q+t). cols must be a positive multiple of 8.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-{f['tileframe']}")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ scale+16(FP), R12")
    p("\tMOVQ x+24(FP), BX")
    p("\tMOVQ cols+32(FP), CX")
    p("\tMOVQ ldo+40(FP), DX")
    p("\tSHLQ $2, DX")
    params_avx512(fam)
    pair_scale("Z4", "(R12)", "4(R12)")
    pair_scale("Z5", "8(R12)", "12(R12)")
    if isfp8(fam):
        p("\tVMULPS        Z12, Z4, Z4")
        p("\tVMULPS        Z12, Z5, Z5")
    p("\tLEAQ (SI)(CX*1), R8")
    p("\tLEAQ (R8)(CX*1), R9")
    p("\tLEAQ (R9)(CX*1), R10")
    p("\tLEAQ (BX)(CX*4), R11")
    p("\tLEAQ (R11)(CX*4), R12")
    p("\tLEAQ (R12)(CX*4), R13")
    for i in range(16, 24):
        p(f"\tVPXORD Z{i}, Z{i}, Z{i}")
    p("\tXORQ AX, AX")
    p()
    p(f"{name}_loop:")
    for j, t in enumerate(["BX", "R11", "R12", "R13"]):
        p(f"\tVBROADCASTF32X8 ({t})(AX*4), Z{j}")
    for q, (a, b, zs) in enumerate([("SI", "R8", "Z4"), ("R9", "R10", "Z5")]):
        p(f"\tVMOVQ       ({a})(AX*1), X6")
        p(f"\tVPINSRQ     $1, ({b})(AX*1), X6, X6")
        dec16(fam)
        p(f"\tVMULPS      {zs}, Z6, Z6")
        for j in range(4):
            p(f"\tVFMADD231PS Z{j}, Z6, Z{16+4*q+j}")
    p("\tADDQ $8, AX")
    p("\tCMPQ AX, CX")
    p(f"\tJLT  {name}_loop")
    p("\tLEAQ (DX)(DX*2), R13")
    addr = ["(DI)", "(DI)(DX*1)", "(DI)(DX*2)", "(DI)(R13*1)"]
    for q in range(2):
        for j in range(4):
            z = 16 + 4 * q + j
            p(f"\tVEXTRACTF32X8 $1, Z{z}, Y7")
            p(f"\tVMOVAPS       Y{z}, Y6")
            hsum("Y6", "X6", "X13")
            hsum("Y7", "X7", "X13")
            p(f"\tVMOVSS X6, {8*q}{addr[j]}")
            p(f"\tVMOVSS X7, {8*q+4}{addr[j]}")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


header("qf_gen.py", "qf_amd64.s")
p("// Quantized weights × float32 activations, dequantized in registers; see")
p("// qf_gen.py for the layout of the loops and qf.go for the formats.")
p()
p("// qfperm<> entry k-1 (k = 1..7, 32 bytes): VPERMD indices moving lanes")
p("// 8-k..7 of a row's last 8 values to lanes 0..k-1.")
for k in range(1, 8):
    idx = [(8 - k + j) if j < k else 0 for j in range(8)]
    for h in range(4):
        v = idx[2 * h] | (idx[2 * h + 1] << 32)
        p(f"DATA qfperm<>+{32*(k-1)+8*h}(SB)/8, $0x{v:016x}")
p("GLOBL qfperm<>(SB), RODATA|NOPTR, $224")
p()
p("// qftail<>: 8 all-ones lanes then 8 zero lanes; the 8 lanes at +32-4k mask")
p("// the first k.")
for i in range(4):
    p(f"DATA qftail<>+{8*i}(SB)/8, $0xffffffffffffffff")
for i in range(4, 8):
    p(f"DATA qftail<>+{8*i}(SB)/8, $0")
p("GLOBL qftail<>(SB), RODATA|NOPTR, $64")
p()
p("// qfe4m3<>: 8 words 0xbf80, the half bits an E4M3 code keeps after <<7.")
p("DATA qfe4m3<>+0(SB)/8, $0xbf80bf80bf80bf80")
p("DATA qfe4m3<>+8(SB)/8, $0xbf80bf80bf80bf80")
p("GLOBL qfe4m3<>(SB), RODATA|NOPTR, $16")
p()
p("// qfkmask<>: word k is (1<<k)-1, an opmask for the first k lanes.")
for k in range(8):
    p(f"DATA qfkmask<>+{2*k}(SB)/2, $0x{(1 << k) - 1:04x}")
p("GLOBL qfkmask<>(SB), RODATA|NOPTR, $16")
p()
p("// HSUM order: ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)), as matVecAVX2.")
p()
for fam in ["e4m3", "e5m2", "i8f32"]:
    matvec_avx2(fam)
    tile_avx2(fam)
    matvec_avx512(fam)
    tile_avx512(fam)
sys.stdout.write("\n".join(out) + "\n")
