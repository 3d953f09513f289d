# Generates qdot_amd64.s: python3 qdot_gen.py > qdot_amd64.s.
#
# Integer-dot products of 32-value weight blocks (Q4_0, Q5_0, Q8_0 in GGUF's
# bytes, int4 groups) with Q8_0 activations: AVX-512 VNNI matvecs that hold
# two rows in one zmm, the AVX2 int4 matvec, and the register-tiled batched
# kernels (qblock.go, int4q8.go, batch.go say what each computes).
#
# Every kernel keeps the float order of the Go versions in qblock.go: 8
# float lanes per (row, token); block b adds float32(int lane)·(d·xd[b]),
# lane l the exact int dot of the block's values 4l..4l+3 (int4: the lane
# split of int4q8.go); then HSUM ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)).
#
# VPDPBUSD multiplies unsigned weight bytes by signed activation bytes, four
# per dword lane. The weights' offset (Q4_0 and int4: values are nibble-8;
# Q5_0: 5 bits - 16; Q8_0: signed bytes made unsigned by +128) comes off as
# off·Σ4x per lane, computed once per activation block with the same
# instruction (unsigned off × x) and used as every row's starting value.
import sys

out = []


def p(s=""):
    out.append(s)


def hsum(y, x, t):
    p(f"\tVEXTRACTF128 $1, {y}, {t}")
    p(f"\tVADDPS       {t}, {x}, {x}")
    p(f"\tVMOVHLPS     {x}, {x}, {t}")
    p(f"\tVADDPS       {t}, {x}, {x}")
    p(f"\tVMOVSHDUP    {x}, {t}")
    p(f"\tVADDSS       {t}, {x}, {x}")


def bytes_const(v, x, y, reg="AX"):
    p(f"\tMOVL         ${v}, {reg}")
    p(f"\tVMOVD        {reg}, {x}")
    p(f"\tVPBROADCASTD {x}, {y}")


# Block geometry: bytes per block, offset of the value bytes, the weight
# offset, whether the scale is an f16 at the block start (else float32 from
# ws, one per gb blocks).
FMTS = {
    "q40": dict(bb=18, qoff=2, off=8, f16=True),
    "q50": dict(bb=22, qoff=6, off=16, f16=True),
    "q80b": dict(bb=34, qoff=2, off=128, f16=True),
    "i4q8": dict(bb=16, qoff=0, off=8, f16=False),
}

ARGS = "out *float32, w *byte, x *int8, xd *float32, rows, nb int, ws *float32, gb, sstride int"


def weights512(f, a, b, z, t):
    """Rows a and b's block -> z = [a's 32 value bytes | b's] (unsigned)."""
    q = FMTS[f]["qoff"]
    if f == "q80b":
        p(f"\tVMOVDQU      {q}({a}), Y{z}")
        p(f"\tVINSERTI64X4 $1, {q}({b}), Z{z}, Z{z}")
        p(f"\tVPXORD       Z14, Z{z}, Z{z}")
        return
    p(f"\tVMOVDQU      {q}({a}), X{z}")
    p(f"\tVINSERTI32X4 $2, {q}({b}), Z{z}, Z{z}")
    p(f"\tVPSRLW       $4, Z{z}, Z{t}")
    p(f"\tVPERMT2Q     Z{t}, Z11, Z{z}")
    p(f"\tVPANDD       Z15, Z{z}, Z{z}")
    if f == "q50":
        p(f"\tMOVL         2({a}), AX")
        p(f"\tMOVL         2({b}), R13")
        p("\tSHLQ         $32, R13")
        p("\tORQ          R13, AX")
        p("\tKMOVQ        AX, K3")
        p(f"\tVPADDB       Z12, Z{z}, K3, Z{z}")


def scale512(f, a, b, z, sa):
    """z = [row a's scale ×8 | row b's] · xd (Z4)."""
    if FMTS[f]["f16"]:
        p(f"\tVPBROADCASTW ({a}), Y{z}")
        p(f"\tVPBROADCASTW ({b}), K2, Y{z}")
        p(f"\tVCVTPH2PS    Y{z}, Z{z}")
    else:
        p(f"\tVBROADCASTSS {sa[0]}, Z{z}")
        p(f"\tVBROADCASTSS {sa[1]}, K2, Z{z}")
    p(f"\tVMULPS       Z4, Z{z}, Z{z}")


def vnni512_matvec(f):
    """Rows i and i+h (h = rows/2) share a zmm, as q40DotsAVX2 pairs them:
    the weights stream from two far-apart places (four streams, two pairs
    of neighbouring rows, ran at half the speed from memory); an odd last
    row goes with itself."""
    g = FMTS[f]
    bb = g["bb"]
    name = f"{f}DotsVNNI512"
    p(f"// func {name}({ARGS})")
    p("// Rows i and i+h (h = rows/2) in the two halves of a zmm, then an odd last")
    p("// row paired with itself. DI R11 the outputs of rows i and i+h; SI R8 the")
    p("// rows' current blocks, BX x, R12 xd, CX blocks left, DX pairs left; Z0")
    p("// the accumulators, Z2 x, Z3 -off·Σx, Z4 xd, K2 the upper half.")
    if f == "i4q8":
        p("// R13 R10 the rows' current scales (R14 bytes per row, R9 = h·R14), AX")
        p("// blocks left in the group.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-72")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ rows+32(FP), DX")
    p("\tSHRQ $1, DX")
    p("\tLEAQ (DI)(DX*4), R11")
    p("\tMOVL $0xff00, AX")
    p("\tKMOVW AX, K2")
    bytes_const("0x0f0f0f0f", "X15", "Z15")
    bytes_const(f"0x{g['off']:02x}{g['off']:02x}{g['off']:02x}{g['off']:02x}", "X14", "Z14")
    if f == "q50":
        bytes_const("0x10101010", "X12", "Z12")
    p("\tVMOVDQU64 qdperm<>(SB), Z11")
    if f == "i4q8":
        p("\tVBROADCASTI32X4 qdeo<>(SB), Z13")
        p("\tMOVQ sstride+64(FP), R14")
        p("\tMOVQ R14, R9")
        p("\tIMULQ DX, R9")
    p("\tMOVQ nb+40(FP), R8")
    p(f"\tIMULQ ${bb}, R8")
    p("\tIMULQ DX, R8")
    p("\tADDQ SI, R8")
    p()
    for bl in ["pair", "odd"]:
        pre = f"{name}_{bl}"
        p(f"{pre}:")
        if bl == "pair":
            p("\tTESTQ DX, DX")
            p(f"\tJZ    {name}_odd")
            a_, b_ = "SI", "R8"
        else:
            p("\tTESTQ $1, rows+32(FP)")
            p(f"\tJZ    {name}_done")
            a_, b_ = "R8", "R8"
        if f == "i4q8":
            # Scales of rows i (R13) and i+h (R10); the odd row is row 2h.
            p("\tMOVQ rows+32(FP), AX")
            p("\tSHRQ $1, AX")
            if bl == "pair":
                p("\tSUBQ DX, AX")
            else:
                p("\tSHLQ $1, AX")
            p("\tIMULQ R14, AX")
            p("\tADDQ ws+48(FP), AX")
            p("\tMOVQ AX, R13")
            p("\tLEAQ (R13)(R9*1), R10")
            if bl == "odd":
                p("\tMOVQ R13, R10")
            p("\tMOVQ gb+56(FP), AX")
        p("\tMOVQ x+16(FP), BX")
        p("\tMOVQ xd+24(FP), R12")
        p("\tMOVQ nb+40(FP), CX")
        p("\tVXORPS Y0, Y0, Y0")
        p("\tTESTQ CX, CX")
        p(f"\tJZ    {pre}_store")
        p(f"{pre}_loop:")
        p("\tVBROADCASTI64X4 (BX), Z2")
        if f == "i4q8":
            p("\tVPSHUFB      Z13, Z2, Z2")
            p("\tVPERMQ       $0xd8, Z2, Z2")
        p("\tVPXORD       Z3, Z3, Z3")
        p("\tVPDPBUSD     Z2, Z14, Z3")
        p("\tVPXORD       Z9, Z9, Z9")
        p("\tVPSUBD       Z3, Z9, Z3")
        p("\tVBROADCASTSS (R12), Z4")
        weights512(f, a_, b_, 5, 9)
        scale512(f, a_, b_, 7, ("(R13)", "(R10)"))
        p("\tVPDPBUSD     Z2, Z5, Z3")
        p("\tVCVTDQ2PS    Z3, Z3")
        p("\tVMULPS       Z7, Z3, Z3")
        p("\tVADDPS       Z3, Z0, Z0")
        for r in ([a_, b_] if a_ != b_ else [a_]):
            p(f"\tADDQ         ${bb}, {r}")
        p("\tADDQ         $32, BX")
        p("\tADDQ         $4, R12")
        if f == "i4q8":
            p("\tDECQ         AX")
            p(f"\tJNZ          {pre}_same")
            p("\tADDQ         $4, R13")
            p("\tADDQ         $4, R10")
            p("\tMOVQ         gb+56(FP), AX")
            p(f"{pre}_same:")
        p("\tDECQ         CX")
        p(f"\tJNZ          {pre}_loop")
        p(f"{pre}_store:")
        if bl == "odd":
            hsum("Y0", "X0", "X9")
            p("\tVMOVSS X0, (R11)")
            continue
        p("\tVEXTRACTF32X8 $1, Z0, Y7")
        hsum("Y0", "X0", "X9")
        p("\tVMOVSS X0, (DI)")
        hsum("Y7", "X7", "X9")
        p("\tVMOVSS X7, (R11)")
        p("\tADDQ $4, DI")
        p("\tADDQ $4, R11")
        p("\tDECQ DX")
        p(f"\tJMP  {pre}")
        p()
    p(f"{name}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def avx2_i4q8():
    name = "i4q8DotsAVX2"
    p(f"// func {name}({ARGS})")
    p("// The Q4_0 loop of q40DotsAVX2 for int4 groups (rows i and i+h, h = rows/2,")
    p("// in SI R8 with scales at R13 R10, then an odd last row): x permuted to evens")
    p("// then odds (Y4), 8·x pair sums (Y5), float32 scales; AX blocks left in the")
    p("// group. Y15 0x0f, Y14 8, Y12 int16 ones, Y11 the x permutation, Y13 Y10")
    p("// accumulators.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-72")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ rows+32(FP), DX")
    p("\tSHRQ $1, DX")
    p("\tLEAQ (DI)(DX*4), R11")
    p("\tMOVQ nb+40(FP), R8")
    p("\tSHLQ $4, R8")
    p("\tIMULQ DX, R8")
    p("\tADDQ SI, R8")
    p("\tMOVQ sstride+64(FP), R14")
    bytes_const("0x0f0f0f0f", "X15", "Y15")
    bytes_const("0x08080808", "X14", "Y14")
    p("\tVPCMPEQW Y12, Y12, Y12")
    p("\tVPSRLW   $15, Y12, Y12")
    p("\tVBROADCASTI128 qdeo<>(SB), Y11")

    def row(P, acc, sc):
        p(f"\tVMOVDQU      ({P}), X0")
        p("\tVPSRLW       $4, X0, X1")
        p("\tVINSERTI128  $1, X1, Y0, Y0")
        p("\tVPAND        Y15, Y0, Y0")
        p("\tVPMADDUBSW   Y4, Y0, Y0")
        p("\tVPSUBW       Y5, Y0, Y0")
        p("\tVPMADDWD     Y12, Y0, Y0")
        p("\tVCVTDQ2PS    Y0, Y0")
        p(f"\tVBROADCASTSS {sc}, Y2")
        p("\tVMULPS       Y6, Y2, Y2")
        p("\tVMULPS       Y2, Y0, Y0")
        p(f"\tVADDPS       Y0, {acc}, {acc}")

    for bl in ["pair", "odd"]:
        pre = f"{name}_{bl}"
        p(f"{pre}:")
        if bl == "pair":
            p("\tTESTQ DX, DX")
            p(f"\tJZ    {name}_odd")
        else:
            p("\tTESTQ $1, rows+32(FP)")
            p(f"\tJZ    {name}_done")
        p("\tMOVQ rows+32(FP), AX")
        p("\tSHRQ $1, AX")
        if bl == "pair":
            p("\tSUBQ DX, AX")
        else:
            p("\tSHLQ $1, AX")
        p("\tIMULQ R14, AX")
        p("\tADDQ ws+48(FP), AX")
        p("\tMOVQ AX, R13")
        p("\tMOVQ rows+32(FP), AX")
        p("\tSHRQ $1, AX")
        p("\tIMULQ R14, AX")
        p("\tLEAQ (R13)(AX*1), R10")
        p("\tMOVQ gb+56(FP), AX")
        p("\tMOVQ x+16(FP), BX")
        p("\tMOVQ xd+24(FP), R9")
        p("\tMOVQ nb+40(FP), CX")
        p("\tVXORPS Y13, Y13, Y13")
        p("\tVXORPS Y10, Y10, Y10")
        p("\tTESTQ CX, CX")
        p(f"\tJZ    {pre}_store")
        p(f"{pre}_loop:")
        p("\tVMOVDQU      (BX), Y4")
        p("\tVPSHUFB      Y11, Y4, Y4")
        p("\tVPERMQ       $0xd8, Y4, Y4")
        p("\tVPMADDUBSW   Y4, Y14, Y5")
        p("\tVBROADCASTSS (R9), Y6")
        if bl == "pair":
            row("SI", "Y13", "(R13)")
            row("R8", "Y10", "(R10)")
            p("\tADDQ         $16, SI")
        else:
            row("R8", "Y13", "(R13)")
        p("\tADDQ         $16, R8")
        p("\tADDQ         $32, BX")
        p("\tADDQ         $4, R9")
        p("\tDECQ         AX")
        p(f"\tJNZ          {pre}_same")
        p("\tADDQ         $4, R13")
        p("\tADDQ         $4, R10")
        p("\tMOVQ         gb+56(FP), AX")
        p(f"{pre}_same:")
        p("\tDECQ         CX")
        p(f"\tJNZ          {pre}_loop")
        p(f"{pre}_store:")
        hsum("Y13", "X13", "X0")
        if bl == "odd":
            p("\tVMOVSS X13, (R11)")
            continue
        p("\tVMOVSS X13, (DI)")
        hsum("Y10", "X10", "X0")
        p("\tVMOVSS X10, (R11)")
        p("\tADDQ   $4, DI")
        p("\tADDQ   $4, R11")
        p("\tDECQ   DX")
        p(f"\tJMP    {pre}")
        p()
    p(f"{name}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def vnni512_tile(f):
    """4 rows × 3 packed token pairs (6 tokens); see qtile.go for the packed
    activations: per pair and block 64 bytes of x ([token 2p | 2p+1]), 64 of
    -off·Σx lanes, 64 of [xd ×8 | xd ×8]."""
    g = FMTS[f]
    bb, q = g["bb"], g["qoff"]
    name = f"{f}TileVNNI512"
    p(f"// func {name}(out *float32, w *byte, xp *byte, ldo, nb int, ws *float32, gb, sstride int)")
    p("// Rows 0-3 of w (nb blocks each) × the 6 tokens of three packed pairs at xp")
    p("// (pairs nb·192 bytes apart): out[t*ldo+r]. Accumulator Z(16+3r+q) holds")
    p("// row r with tokens 2q (low half) and 2q+1 (high half). SI R8 rows 0 and")
    p("// 3 (R9 bytes per row), BX the pairs' current block (R10 between pairs),")
    p("// CX blocks left; Z0-Z2 the pairs' x, Z3-Z5 their -off·Σx, Z6-Z8 their")
    p("// xd; Z9 weights, Z10 the row's scale, Z11 int lanes, Z13 d·xd.")
    if f == "i4q8":
        p("// DI row 0's scales (DX bytes per row), AX blocks left in the group.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ nb+32(FP), R9")
    p(f"\tIMULQ ${bb}, R9")
    p("\tLEAQ (SI)(R9*2), R8")
    p("\tADDQ R9, R8")
    p("\tMOVQ xp+16(FP), BX")
    p("\tMOVQ nb+32(FP), R10")
    p("\tIMULQ $192, R10")
    p("\tMOVQ nb+32(FP), CX")
    p("\tMOVL $0xff00ff00, AX")
    p("\tKMOVD AX, K4")
    bytes_const("0x0f0f0f0f", "X15", "Z15")
    if f == "q80b":
        bytes_const("0x80808080", "X14", "Z14")
    if f == "q50":
        bytes_const("0x10101010", "X12", "Z12")
    if f == "i4q8":
        p("\tMOVQ ws+40(FP), DI")
        p("\tMOVQ sstride+56(FP), DX")
        p("\tMOVQ gb+48(FP), AX")
    for i in range(16, 28):
        p(f"\tVPXORD Z{i}, Z{i}, Z{i}")
    p(f"{name}_loop:")
    for k, a in enumerate(["(BX)", "(BX)(R10*1)", "(BX)(R10*2)"]):
        p(f"\tVMOVDQU64 {a}, Z{k}")
        p(f"\tVMOVDQU64 64{a}, Z{3+k}")
        p(f"\tVMOVDQU64 128{a}, Z{6+k}")
    rows = ["(SI)", "(SI)(R9*1)", "(SI)(R9*2)", "(R8)"]
    for r, ra in enumerate(rows):
        # Weights of row r in both halves.
        if f == "q80b":
            p(f"\tVBROADCASTI64X4 {q}{ra}, Z9")
            p("\tVPXORD          Z14, Z9, Z9")
        else:
            p(f"\tVBROADCASTI32X4 {q}{ra}, Z9")
            p("\tVPSRLW          $4, Z9, K4, Z9")
            p("\tVPANDD          Z15, Z9, Z9")
            if f == "q50":
                p(f"\tMOVL            2{ra}, R11")
                p("\tMOVQ            R11, R12")
                p("\tSHLQ            $32, R12")
                p("\tORQ             R12, R11")
                p("\tKMOVQ           R11, K3")
                p("\tVPADDB          Z12, Z9, K3, Z9")
        if g["f16"]:
            p(f"\tVPBROADCASTW    {ra}, Y10")
            p("\tVCVTPH2PS       Y10, Z10")
        else:
            if r < 3:
                sa = ["(DI)", "(DI)(DX*1)", "(DI)(DX*2)"][r]
            else:
                p("\tLEAQ            (DI)(DX*2), R11")
                sa = "(R11)(DX*1)"
            p(f"\tVBROADCASTSS    {sa}, Z10")
        for qq in range(3):
            acc = 16 + 3 * r + qq
            p(f"\tVMULPS      Z{6+qq}, Z10, Z13")
            p(f"\tVMOVDQA64   Z{3+qq}, Z11")
            p(f"\tVPDPBUSD    Z{qq}, Z9, Z11")
            p("\tVCVTDQ2PS   Z11, Z11")
            p("\tVMULPS      Z13, Z11, Z11")
            p(f"\tVADDPS      Z11, Z{acc}, Z{acc}")
    p(f"\tADDQ ${bb}, SI")
    p(f"\tADDQ ${bb}, R8")
    p("\tADDQ $192, BX")
    if f == "i4q8":
        p("\tDECQ AX")
        p(f"\tJNZ  {name}_same")
        p("\tADDQ $4, DI")
        p("\tMOVQ gb+48(FP), AX")
        p(f"{name}_same:")
    p("\tDECQ CX")
    p(f"\tJNZ  {name}_loop")
    # Store: token 2q in the low half, 2q+1 in the high half.
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+24(FP), DX")
    p("\tSHLQ $2, DX")
    for qq in range(3):
        for r in range(4):
            acc = 16 + 3 * r + qq
            p(f"\tVEXTRACTF32X8 $1, Z{acc}, Y7")
            p(f"\tVMOVAPS       Y{acc}, Y6")
            hsum("Y6", "X6", "X13")
            hsum("Y7", "X7", "X13")
            p(f"\tVMOVSS X6, {4*r}(DI)")
            p(f"\tVMOVSS X7, {4*r}(DI)(DX*1)")
        p("\tLEAQ (DI)(DX*2), DI")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def i8_tile():
    name = "i8TileVNNI512"
    p(f"// func {name}(out *float32, w *int8, x *int8, cols, ldo int, scale, xs *float32, xsum *int32)")
    p("// Rows 0-3 of the int8 matrix w × tokens 0-5 of x (both cols bytes apart,")
    p("// cols a positive multiple of 64): out[t*ldo+r] = float32(Σ w·x) ·")
    p("// (scale[r]·xs[t]), as matVecI8Range. VPDPBUSD takes w+128 (unsigned) ×")
    p("// x; 128·Σx_t (xsum) comes off the exact sum. Z8+6r+t accumulates (r, t);")
    p("// Z0-Z5 the tokens' 64 columns, Z6 a row's, Z7 bytes 0x80. Rows at SI R9")
    p("// R12 R13, tokens at BX R10 R11 R14 DI DX, AX the column.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
    p("\tMOVQ cols+24(FP), R8")
    p("\tMOVQ w+8(FP), SI")
    p("\tLEAQ (SI)(R8*1), R9")
    p("\tLEAQ (R9)(R8*1), R12")
    p("\tLEAQ (R12)(R8*1), R13")
    p("\tMOVQ x+16(FP), BX")
    p("\tLEAQ (BX)(R8*1), R10")
    p("\tLEAQ (R10)(R8*1), R11")
    p("\tLEAQ (R11)(R8*1), R14")
    p("\tLEAQ (R14)(R8*1), DI")
    p("\tLEAQ (DI)(R8*1), DX")
    bytes_const("0x80808080", "X7", "Z7")
    for i in range(8, 32):
        p(f"\tVPXORD Z{i}, Z{i}, Z{i}")
    p("\tXORQ AX, AX")
    p(f"{name}_loop:")
    for t, r in enumerate(["BX", "R10", "R11", "R14", "DI", "DX"]):
        p(f"\tVMOVDQU64 ({r})(AX*1), Z{t}")
    for k, r in enumerate(["SI", "R9", "R12", "R13"]):
        p(f"\tVMOVDQU64 ({r})(AX*1), Z6")
        p("\tVPXORD    Z7, Z6, Z6")
        for t in range(6):
            p(f"\tVPDPBUSD  Z{t}, Z6, Z{8+6*k+t}")
    p("\tADDQ $64, AX")
    p("\tCMPQ AX, R8")
    p(f"\tJLT  {name}_loop")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+32(FP), DX")
    p("\tSHLQ $2, DX")
    p("\tMOVQ scale+40(FP), SI")
    p("\tMOVQ xs+48(FP), BX")
    p("\tMOVQ xsum+56(FP), R10")
    for t in range(6):
        p(f"\tMOVL         {4*t}(R10), AX")
        p("\tSHLL         $7, AX")
        for r in range(4):
            z = 8 + 6 * r + t
            p(f"\tVEXTRACTI64X4 $1, Z{z}, Y0")
            p(f"\tVPADDD       Y{z}, Y0, Y0")
            p("\tVEXTRACTI128  $1, Y0, X1")
            p("\tVPADDD       X1, X0, X0")
            p("\tVPSHUFD      $0x4e, X0, X1")
            p("\tVPADDD       X1, X0, X0")
            p("\tVPSHUFD      $0xb1, X0, X1")
            p("\tVPADDD       X1, X0, X0")
            p("\tVMOVD        X0, CX")
            p("\tSUBL         AX, CX")
            p("\tVCVTSI2SSL   CX, X0, X0")
            p(f"\tVMOVSS       {4*r}(SI), X1")
            p(f"\tVMULSS       {4*t}(BX), X1, X1")
            p("\tVMULSS       X1, X0, X0")
            p(f"\tVMOVSS       X0, {4*r}(DI)")
        p("\tADDQ DX, DI")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


K4SCALES = """\tMOVL        4(SI), AX
\tMOVL        8(SI), R10
\tMOVL        12(SI), R11
\tMOVL        AX, R12
\tANDL        $0x3f3f3f3f, R12
\tMOVL        R10, R13
\tANDL        $0x3f3f3f3f, R13
\tMOVL        R11, R14
\tANDL        $0x0f0f0f0f, R14
\tSHRL        $6, AX
\tANDL        $0x03030303, AX
\tSHLL        $4, AX
\tORL         AX, R14
\tSHRL        $4, R11
\tANDL        $0x0f0f0f0f, R11
\tSHRL        $6, R10
\tANDL        $0x03030303, R10
\tSHLL        $4, R10
\tORL         R10, R11
\tSHLQ        $32, R14
\tORQ         R14, R12
\tSHLQ        $32, R11
\tORQ         R11, R13
\tVMOVQ       R12, X11
\tVPMOVZXBW   X11, X11
\tVMOVQ       R13, X5
\tVPMOVZXBW   X5, X5"""

KFLOAT = """\tVMOVDQU      (R9), X6
\tVMOVDQU      16(R9), X7
\tVPHADDW      X7, X6, X6
\tVPMADDWD     X6, X5, X5
\tVPSHUFD      $0x4e, X5, X6
\tVPADDD       X6, X5, X5
\tVPSHUFD      $0xb1, X5, X6
\tVPADDD       X6, X5, X5
\tVCVTDQ2PS    X10, X10
\tVCVTDQ2PS    X5, X5
\tVMOVD        (SI), X8
\tVCVTPH2PS    X8, X8
\tVBROADCASTSS (R8), X9
\tVMULPS       X9, X8, X8
\tVMULSS       X8, X10, X10
\tVADDSS       X10, X13, X13
\tVMOVSHDUP    X8, X8
\tVMULSS       X8, X5, X5
\tVADDSS       X5, X12, X12"""


def isum_z(z0, z1):
    """z0 (+ z1) (16 int32 lanes each) -> X10 lane 0."""
    if z1:
        p(f"\tVPADDD        {z1}, {z0}, {z0}")
    p(f"\tVEXTRACTI64X4 $1, {z0}, Y6")
    p(f"\tVPADDD        Y6, Y{z0[1:]}, Y10")
    p("\tVEXTRACTI128  $1, Y10, X6")
    p("\tVPADDD        X6, X10, X10")
    p("\tVPSHUFD       $0x4e, X10, X6")
    p("\tVPADDD        X6, X10, X10")
    p("\tVPSHUFD       $0xb1, X10, X6")
    p("\tVPADDD        X6, X10, X10")


def kquant512(f):
    """Q4_K, Q5_K, Q6_K × Q8_K, one row at a time, 64 values per zmm:
    VPMADDUBSW (unsigned values × x) then VPDPWSSD by the 16-value scales
    into two int32 accumulators; the super-block's exact int sum and its
    float steps are qblock.go's."""
    name = f"{f}DotsVNNI512"
    bb = {"q4k": 144, "q5k": 176, "q6k": 210}[f]
    p(f"// func {name}(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)")
    p("// out[r] = dot(row r, Q8_K x), as the AVX2 kernel but 64 values per zmm.")
    p("// SI block, BX x, R8 xd, R9 x sums, CX blocks left, DX rows left, DI out;")
    p("// Z0 Z1 int sums, Z15 0x0f, Z16-Z19 the VPERMW picks of each 64 values'")
    p("// scales, X13 (X12) the scale (min) accumulator.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-56")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ rows+40(FP), DX")
    bytes_const("0x0f0f0f0f", "X15", "Z15")
    if f == "q5k":
        bytes_const("0x01010101", "X14", "Z14")
    if f == "q6k":
        bytes_const("0x03030303", "X14", "Z14")
    tab = "qdk4<>" if f != "q6k" else "qdk6<>"
    for j in range(4):
        p(f"\tVMOVDQU64 {tab}+{64*j}(SB), Z{16+j}")
    p(f"{name}_row:")
    p("\tTESTQ  DX, DX")
    p(f"\tJZ     {name}_done")
    p("\tMOVQ   x+16(FP), BX")
    p("\tMOVQ   xd+24(FP), R8")
    p("\tMOVQ   xs+32(FP), R9")
    p("\tMOVQ   nb+48(FP), CX")
    p("\tVXORPS X13, X13, X13")
    p("\tVXORPS X12, X12, X12")
    p("\tTESTQ  CX, CX")
    p(f"\tJZ     {name}_store")
    p(f"{name}_block:")
    if f in ("q4k", "q5k"):
        for line in K4SCALES.split("\n"):
            p(line)
        p("\tVPXORD Z0, Z0, Z0")
        p("\tVPXORD Z1, Z1, Z1")
        qo = 16 if f == "q4k" else 48
        if f == "q5k":
            # Z7 = [qh | qh>>1]: bit 2j (2j+1) of qh[l] is value l's fifth bit
            # in sub-block 2j (2j+1); shifted down by 2 after each 64 values.
            p("\tVMOVDQU      16(SI), Y7")
            p("\tVPSRLW       $1, Y7, Y6")
            p("\tVINSERTI64X4 $1, Y6, Z7, Z7")
        for j in range(4):
            p(f"\tVMOVDQU      {qo+32*j}(SI), Y2")
            p("\tVPSRLW       $4, Y2, Y3")
            p("\tVINSERTI64X4 $1, Y3, Z2, Z2")
            p("\tVPANDD       Z15, Z2, Z2")
            if f == "q5k":
                p("\tVPANDD       Z14, Z7, Z3")
                p("\tVPSLLW       $4, Z3, Z3")
                p("\tVPORD        Z3, Z2, Z2")
                p("\tVPSRLW       $2, Z7, Z7")
            p(f"\tVPMADDUBSW   {64*j}(BX), Z2, Z2")
            p(f"\tVPERMW       Z11, Z{16+j}, Z3")
            p(f"\tVPDPWSSD     Z3, Z2, Z{j%2}")
        isum_z("Z0", "Z1")
        for line in KFLOAT.split("\n"):
            p(line)
    else:
        # -32·Σ scale·sums, then the 256 values (0..63) in 4 zmm.
        p("\tVPMOVSXBW    192(SI), Y6")
        p("\tVPMADDWD     (R9), Y6, Y6")
        p("\tVPSLLD       $5, Y6, Y6")
        p("\tVPXORD       Z0, Z0, Z0")
        p("\tVPSUBD       Z6, Z0, Z0")
        p("\tVPXORD       Z1, Z1, Z1")
        p("\tVPMOVSXBW    192(SI), Y11")
        for hh in range(2):
            # Half hh: ql 64 bytes at 64hh, qh 32 bytes at 128+32hh.
            p(f"\tVMOVDQU64    {64*hh}(SI), Z8")
            p(f"\tVMOVDQU      {128+32*hh}(SI), Y9")
            p("\tVPSRLW       $2, Y9, Y10")
            p("\tVINSERTI64X4 $1, Y10, Z9, Z9")
            for c2 in range(2):
                if c2 == 0:
                    p("\tVPANDD       Z15, Z8, Z2")
                else:
                    p("\tVPSRLW       $4, Z8, Z2")
                    p("\tVPANDD       Z15, Z2, Z2")
                    p("\tVPSRLW       $4, Z9, Z9")
                p("\tVPANDD       Z14, Z9, Z3")
                p("\tVPSLLW       $4, Z3, Z3")
                p("\tVPORD        Z3, Z2, Z2")
                p(f"\tVPMADDUBSW   {128*hh+64*c2}(BX), Z2, Z2")
                p(f"\tVPERMW       Z11, Z{16+2*hh+c2}, Z3")
                p(f"\tVPDPWSSD     Z3, Z2, Z{c2}")
        isum_z("Z0", "Z1")
        p("\tVCVTDQ2PS    X10, X10")
        p("\tVPBROADCASTW 208(SI), X8")
        p("\tVCVTPH2PS    X8, X8")
        p("\tVBROADCASTSS (R8), X9")
        p("\tVMULSS       X9, X8, X8")
        p("\tVMULSS       X8, X10, X10")
        p("\tVADDSS       X10, X12, X12")
    p(f"\tADDQ  ${bb}, SI")
    p("\tADDQ  $256, BX")
    p("\tADDQ  $4, R8")
    p("\tADDQ  $32, R9")
    p("\tDECQ  CX")
    p(f"\tJNZ   {name}_block")
    p(f"{name}_store:")
    if f == "q6k":
        p("\tVMOVSS X12, (DI)")
    else:
        p("\tVSUBSS X12, X13, X13")
        p("\tVMOVSS X13, (DI)")
    p("\tADDQ   $4, DI")
    p("\tDECQ   DX")
    p(f"\tJMP    {name}_row")
    p(f"{name}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def q4k_finish(acc, accm):
    """End a Q4_K super-block for 4 tokens at once: Y0-Y3 the tokens' int32
    lanes; X13 the mins (words); SI the block, (R10, R11, R12) the xd
    pointers, (R13, R14, AX) the sums. Lane t of acc (accm) += float32(isum_t)
    ·float32(d·xd_t) (msum_t·float32(dmin·xd_t)): dotQ4KGo's steps, token by
    token in the lanes. Clobbers Y4-Y9."""
    # isum: [Y0..Y3 reduced] in X4.
    p("\tVPHADDD      Y1, Y0, Y4")
    p("\tVPHADDD      Y3, Y2, Y5")
    p("\tVPHADDD      Y5, Y4, Y4")
    p("\tVEXTRACTI128 $1, Y4, X5")
    p("\tVPADDD       X5, X4, X4")
    # msum: pair sums of each token's 16 x sums, times the mins.
    p("\tVMOVDQU      (R13), Y5")
    p("\tVMOVDQU      (R13)(R14*1), Y6")
    p("\tVPHADDW      Y6, Y5, Y5")
    p("\tVMOVDQU      (R13)(R14*2), Y6")
    p("\tVMOVDQU      (AX), Y7")
    p("\tVPHADDW      Y7, Y6, Y6")
    p("\tVPERMQ       $0x50, Y13, Y7")
    p("\tVPMADDWD     Y7, Y5, Y5")
    p("\tVPMADDWD     Y7, Y6, Y6")
    p("\tVPHADDD      Y6, Y5, Y5")
    p("\tVEXTRACTI128 $1, Y5, X6")
    p("\tVPADDD       X6, X5, X5")
    # Floats.
    p("\tVMOVSS       (R10), X6")
    p("\tVINSERTPS    $0x10, (R10)(R11*1), X6, X6")
    p("\tVINSERTPS    $0x20, (R10)(R11*2), X6, X6")
    p("\tVINSERTPS    $0x30, (R12), X6, X6")
    p("\tVMOVD        (SI), X8")
    p("\tVCVTPH2PS    X8, X8")
    p("\tVBROADCASTSS X8, X9")
    p("\tVMOVSHDUP    X8, X8")
    p("\tVBROADCASTSS X8, X8")
    p("\tVMULPS       X6, X9, X9")
    p("\tVMULPS       X6, X8, X8")
    p("\tVCVTDQ2PS    X4, X4")
    p("\tVMULPS       X9, X4, X4")
    p(f"\tVADDPS       X4, {acc}, {acc}")
    p("\tVCVTDQ2PS    X5, X5")
    p("\tVMULPS       X8, X5, X5")
    p(f"\tVADDPS       X5, {accm}, {accm}")


def q6k_finish(acc):
    """End a Q6_K super-block for 4 tokens at once: Y0-Y3 the tokens' int32
    lanes (values 0..63 times x, scaled); the -32 offset comes off as
    32·Σ_g scale_g·sums_g per token; lane t of acc += float32(isum_t) ·
    float32(d·xd_t), as dotQ6KGo. Clobbers Y4-Y10."""
    p("\tVPHADDD      Y1, Y0, Y4")
    p("\tVPHADDD      Y3, Y2, Y5")
    p("\tVPHADDD      Y5, Y4, Y4")
    p("\tVEXTRACTI128 $1, Y4, X5")
    p("\tVPADDD       X5, X4, X4")
    p("\tVPMOVSXBW    192(SI), Y10")
    p("\tVPMADDWD     (R13), Y10, Y5")
    p("\tVPMADDWD     (R13)(R14*1), Y10, Y6")
    p("\tVPMADDWD     (R13)(R14*2), Y10, Y7")
    p("\tVPMADDWD     (AX), Y10, Y8")
    p("\tVPHADDD      Y6, Y5, Y5")
    p("\tVPHADDD      Y8, Y7, Y7")
    p("\tVPHADDD      Y7, Y5, Y5")
    p("\tVEXTRACTI128 $1, Y5, X6")
    p("\tVPADDD       X6, X5, X5")
    p("\tVPSLLD       $5, X5, X5")
    p("\tVPSUBD       X5, X4, X4")
    p("\tVMOVSS       (R10), X6")
    p("\tVINSERTPS    $0x10, (R10)(R11*1), X6, X6")
    p("\tVINSERTPS    $0x20, (R10)(R11*2), X6, X6")
    p("\tVINSERTPS    $0x30, (R12), X6, X6")
    p("\tVPBROADCASTW 208(SI), X8")
    p("\tVCVTPH2PS    X8, X8")
    p("\tVMULPS       X6, X8, X8")
    p("\tVCVTDQ2PS    X4, X4")
    p("\tVMULPS       X8, X4, X4")
    p(f"\tVADDPS       X4, {acc}, {acc}")


def kx_prologue(name, bb):
    """Common set-up of the K-quant tiles: SI the row, BX R9 tokens 0 and 3
    (R8 apart), R10 R12 their xd (R11 apart), R13 AX their sums (R14 apart),
    CX blocks left."""
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ cols+56(FP), R8")
    p("\tMOVQ x+16(FP), BX")
    p("\tLEAQ (BX)(R8*2), R9")
    p("\tADDQ R8, R9")
    p("\tMOVQ nb+48(FP), R11")
    p("\tSHLQ $2, R11")
    p("\tMOVQ xd+24(FP), R10")
    p("\tLEAQ (R10)(R11*2), R12")
    p("\tADDQ R11, R12")
    p("\tMOVQ R8, R14")
    p("\tSHRQ $3, R14")
    p("\tMOVQ xs+32(FP), R13")
    p("\tLEAQ (R13)(R14*2), AX")
    p("\tADDQ R14, AX")
    p("\tMOVQ nb+48(FP), CX")


def kx_epilogue(name, bb, acc, accm):
    p(f"\tADDQ  ${bb}, SI")
    p("\tADDQ  $256, BX")
    p("\tADDQ  $256, R9")
    p("\tADDQ  $4, R10")
    p("\tADDQ  $4, R12")
    p("\tADDQ  $32, R13")
    p("\tADDQ  $32, AX")
    p("\tDECQ  CX")
    p(f"\tJNZ   {name}_block")
    p(f"{name}_store:")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+40(FP), DX")
    p("\tSHLQ $2, DX")
    p("\tLEAQ (DX)(DX*2), R8")
    if accm:
        p(f"\tVSUBPS       {accm}, {acc}, X0")
    else:
        p(f"\tVMOVAPS      {acc}, X0")
    p("\tVMOVSS       X0, (DI)")
    p("\tVEXTRACTPS   $1, X0, (DI)(DX*1)")
    p("\tVEXTRACTPS   $2, X0, (DI)(DX*2)")
    p("\tVEXTRACTPS   $3, X0, (DI)(R8*1)")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def q6k_tile():
    name = "q6kTileVNNI512"
    p(f"// func {name}(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)")
    p("// One Q6_K row × tokens 0-3, as q4kTileVNNI512: each 64 values (Z2,")
    p("// scale words Z5) unpacked once for the tokens' VPMADDUBSW + VPDPWSSD into")
    p("// Z20-Z23; X16 the float accumulators (q6k_finish).")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
    kx_prologue(name, 210)
    bytes_const("0x0f0f0f0f", "X15", "Z15", reg="DX")
    bytes_const("0x03030303", "X14", "Z14", reg="DX")
    for j in range(4):
        p(f"\tVMOVDQU64 qdk6<>+{64*j}(SB), Z{24+j}")
    p("\tVXORPS X16, X16, X16")
    p("\tTESTQ CX, CX")
    p(f"\tJZ    {name}_store")
    p(f"{name}_block:")
    p("\tVPMOVSXBW    192(SI), Y11")
    for t in range(4):
        p(f"\tVPXORD Z{20+t}, Z{20+t}, Z{20+t}")
    xa = ["(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(R9)"]
    for hh in range(2):
        p(f"\tVMOVDQU64    {64*hh}(SI), Z8")
        p(f"\tVMOVDQU      {128+32*hh}(SI), Y9")
        p("\tVPSRLW       $2, Y9, Y10")
        p("\tVINSERTI64X4 $1, Y10, Z9, Z9")
        for c2 in range(2):
            if c2 == 0:
                p("\tVPANDD       Z15, Z8, Z2")
            else:
                p("\tVPSRLW       $4, Z8, Z2")
                p("\tVPANDD       Z15, Z2, Z2")
                p("\tVPSRLW       $4, Z9, Z9")
            p("\tVPANDD       Z14, Z9, Z3")
            p("\tVPSLLW       $4, Z3, Z3")
            p("\tVPORD        Z3, Z2, Z2")
            p(f"\tVPERMW       Z11, Z{24+2*hh+c2}, Z5")
            for t in range(4):
                p(f"\tVPMADDUBSW   {128*hh+64*c2}{xa[t]}, Z2, Z{6+t%2}")
                p(f"\tVPDPWSSD     Z5, Z{6+t%2}, Z{20+t}")
    for t in range(4):
        p(f"\tVEXTRACTI64X4 $1, Z{20+t}, Y4")
        p(f"\tVPADDD        Y4, Y{20+t}, Y{t}")
    q6k_finish("X16")
    kx_epilogue(name, 210, "X16", None)


def q6k_tile_avx2():
    name = "q6kTileAVX2"
    p(f"// func {name}(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)")
    p("// q6kTileVNNI512 in ymm: 32 values at a time as q6KDotsAVX2's Q6HALF (Y4,")
    p("// scale words Y10 picked from the half's scales Y11 by qdk6s<>); Y0-Y3 the")
    p("// tokens' int sums, X12 the float accumulators.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
    kx_prologue(name, 210)
    bytes_const("0x0f0f0f0f", "X15", "Y15", reg="DX")
    bytes_const("0x30303030", "X14", "Y14", reg="DX")
    p("\tVXORPS X12, X12, X12")
    p("\tTESTQ CX, CX")
    p(f"\tJZ    {name}_store")
    p(f"{name}_block:")
    for t in range(4):
        p(f"\tVPXOR Y{t}, Y{t}, Y{t}")
    xa = ["(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(R9)"]
    for hh in range(2):
        p(f"\tVPMOVSXBW    {192+8*hh}(SI), X11")
        p("\tVINSERTI128  $1, X11, Y11, Y11")
        p(f"\tVMOVDQU      {64*hh}(SI), Y7")
        p(f"\tVMOVDQU      {64*hh+32}(SI), Y8")
        p(f"\tVMOVDQU      {128+32*hh}(SI), Y9")
        for c in range(4):
            if c == 0:
                p("\tVPAND        Y15, Y7, Y4")
                p("\tVPSLLW       $4, Y9, Y5")
            elif c == 1:
                p("\tVPAND        Y15, Y8, Y4")
                p("\tVPSLLW       $2, Y9, Y5")
            elif c == 2:
                p("\tVPSRLW       $4, Y7, Y4")
                p("\tVPAND        Y15, Y4, Y4")
                p("\tVMOVDQA      Y9, Y5")
            else:
                p("\tVPSRLW       $4, Y8, Y4")
                p("\tVPAND        Y15, Y4, Y4")
                p("\tVPSRLW       $2, Y9, Y5")
            p("\tVPAND        Y14, Y5, Y5")
            p("\tVPOR         Y5, Y4, Y4")
            p(f"\tVPSHUFB      qdk6s<>+{32*c}(SB), Y11, Y10")
            for t in range(4):
                p(f"\tVPMADDUBSW   {128*hh+32*c}{xa[t]}, Y4, Y6")
                p("\tVPMADDWD     Y10, Y6, Y6")
                p(f"\tVPADDD       Y6, Y{t}, Y{t}")
    q6k_finish("X12")
    kx_epilogue(name, 210, "X12", None)


def q4k_tile(q5=False):
    name = "q5kTileVNNI512" if q5 else "q4kTileVNNI512"
    bb, qo = (176, 48) if q5 else (144, 16)
    p(f"// func {name}(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)")
    p("// One Q4_K row × tokens 0-3 of a Q8_K activation (x rows cols bytes apart,")
    p("// xd nb floats, xs cols/16 sums): out[t*ldo]. Each 64 values of the row are")
    p("// unpacked once (Z4, scale words Z5) for the 4 tokens' VPMADDUBSW +")
    p("// VPDPWSSD into Z0-Z3; each super-block ends for the 4 tokens at once")
    p("// (q4k_finish) into the lanes of X16 (scale) and X17 (min). The 6-bit")
    p("// scales and mins are unpacked in xmm (X12: scales, X13: mins, as words).")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ cols+56(FP), R8")
    p("\tMOVQ x+16(FP), BX")
    p("\tLEAQ (BX)(R8*2), R9")
    p("\tADDQ R8, R9")
    p("\tMOVQ nb+48(FP), R11")
    p("\tSHLQ $2, R11")
    p("\tMOVQ xd+24(FP), R10")
    p("\tLEAQ (R10)(R11*2), R12")
    p("\tADDQ R11, R12")
    p("\tMOVQ R8, R14")
    p("\tSHRQ $3, R14")
    p("\tMOVQ xs+32(FP), R13")
    p("\tLEAQ (R13)(R14*2), AX")
    p("\tADDQ R14, AX")
    p("\tMOVQ nb+48(FP), CX")
    bytes_const("0x0f0f0f0f", "X15", "Z15", reg="DX")
    if q5:
        bytes_const("0x01010101", "X14", "Z14", reg="DX")
    for j in range(4):
        p(f"\tVMOVDQU64 qdk4<>+{64*j}(SB), Z{24+j}")
    p("\tVXORPS X16, X16, X16")
    p("\tVXORPS X17, X17, X17")
    p("\tTESTQ CX, CX")
    p(f"\tJZ    {name}_store")
    p(f"{name}_block:")
    # Scales and mins (get_scale_min_k4) in xmm: X6 = [A, B], X7 = [C].
    p("\tVMOVQ       4(SI), X6")
    p("\tVMOVD       12(SI), X7")
    p("\tVPSRLW      $6, X6, X8")
    p("\tVPANDD      qdk3<>(SB), X8, X8")
    p("\tVPSLLW      $4, X8, X8")
    p("\tVPANDD      qdk3f<>(SB), X6, X6")
    p("\tVPSRLW      $4, X7, X9")
    p("\tVPAND       X15, X7, X7")
    p("\tVPAND       X15, X9, X9")
    p("\tVPUNPCKLDQ  X9, X7, X7")
    p("\tVPOR        X8, X7, X7")
    p("\tVPUNPCKLDQ  X7, X6, X6")
    p("\tVPMOVZXBW   X6, Y6")
    p("\tVMOVDQA     X6, X12")
    p("\tVEXTRACTI128 $1, Y6, X13")
    for t in range(4):
        p(f"\tVPXORD Z{t}, Z{t}, Z{t}")
    xa = ["(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(R9)"]
    if q5:
        p("\tVMOVDQU      16(SI), Y10")
        p("\tVPSRLW       $1, Y10, Y11")
        p("\tVINSERTI64X4 $1, Y11, Z10, Z10")
    for j in range(4):
        p(f"\tVMOVDQU      {qo+32*j}(SI), Y4")
        p("\tVPSRLW       $4, Y4, Y6")
        p("\tVINSERTI64X4 $1, Y6, Z4, Z4")
        p("\tVPANDD       Z15, Z4, Z4")
        if q5:
            p("\tVPANDD       Z14, Z10, Z11")
            p("\tVPSLLW       $4, Z11, Z11")
            p("\tVPORD        Z11, Z4, Z4")
            p("\tVPSRLW       $2, Z10, Z10")
        p(f"\tVPERMW       Z12, Z{24+j}, Z5")
        for t in range(4):
            p(f"\tVPMADDUBSW   {64*j}{xa[t]}, Z4, Z{6+t}")
            p(f"\tVPDPWSSD     Z5, Z{6+t}, Z{t}")
    for t in range(4):
        p(f"\tVEXTRACTI64X4 $1, Z{t}, Y4")
        p(f"\tVPADDD        Y4, Y{t}, Y{t}")
    q4k_finish("X16", "X17")
    p(f"\tADDQ  ${bb}, SI")
    p("\tADDQ  $256, BX")
    p("\tADDQ  $256, R9")
    p("\tADDQ  $4, R10")
    p("\tADDQ  $4, R12")
    p("\tADDQ  $32, R13")
    p("\tADDQ  $32, AX")
    p("\tDECQ  CX")
    p(f"\tJNZ   {name}_block")
    p(f"{name}_store:")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+40(FP), DX")
    p("\tSHLQ $2, DX")
    p("\tLEAQ (DX)(DX*2), R8")
    p("\tVSUBPS       X17, X16, X0")
    p("\tVMOVSS       X0, (DI)")
    p("\tVEXTRACTPS   $1, X0, (DI)(DX*1)")
    p("\tVEXTRACTPS   $2, X0, (DI)(DX*2)")
    p("\tVEXTRACTPS   $3, X0, (DI)(R8*1)")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def avx2_tile(f):
    """One row × the 6 tokens of three packed pairs, in ymm: the AVX2 twin of
    vnni512_tile (VPMADDUBSW + VPMADDWD; Q8_0 by the sign trick, the packed
    -off·Σx unused)."""
    g = FMTS[f]
    bb, q = g["bb"], g["qoff"]
    name = f"{f}TileAVX2"
    p(f"// func {name}(out *float32, w *byte, xp *byte, ldo, nb int, ws *float32, gb, sstride int)")
    p("// Row 0 of w × the 6 tokens of three packed pairs at xp (nb·192 bytes")
    p("// apart): out[t*ldo]. Y0-Y5 the tokens' accumulators, Y6 the weights")
    p("// (Q8_0: signed, Y11 their magnitudes), Y7 the row's scale, Y13 int16")
    p("// ones, Y15 0x0f. SI the row's block, BX the pairs' (R10 apart), CX")
    p("// blocks left.")
    if f == "i4q8":
        p("// DI the row's scales, AX blocks left in the group.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ xp+16(FP), BX")
    p("\tMOVQ nb+32(FP), R10")
    p("\tIMULQ $192, R10")
    p("\tMOVQ nb+32(FP), CX")
    bytes_const("0x0f0f0f0f", "X15", "Y15")
    p("\tVPCMPEQW Y13, Y13, Y13")
    p("\tVPSRLW   $15, Y13, Y13")
    if f == "i4q8":
        p("\tMOVQ ws+40(FP), DI")
        p("\tMOVQ gb+48(FP), AX")
    for i in range(6):
        p(f"\tVXORPS Y{i}, Y{i}, Y{i}")
    p(f"{name}_loop:")
    if f == "q80b":
        p(f"\tVMOVDQU      {q}(SI), Y6")
        p("\tVPABSB       Y6, Y11")
    else:
        p(f"\tVMOVDQU      {q}(SI), X6")
        p("\tVPSRLW       $4, X6, X8")
        p("\tVINSERTI128  $1, X8, Y6, Y6")
        p("\tVPAND        Y15, Y6, Y6")
    if g["f16"]:
        p("\tVPBROADCASTW (SI), X7")
        p("\tVCVTPH2PS    X7, Y7")
    else:
        p("\tVBROADCASTSS (DI), Y7")
    pairs = ["(BX)", "(BX)(R10*1)", "(BX)(R10*2)"]
    for qq, pa in enumerate(pairs):
        for h in range(2):
            acc = f"Y{2*qq+h}"
            xa, na, da = f"{32*h}{pa}", f"{64+32*h}{pa}", f"{128+32*h}{pa}"
            if f == "q80b":
                p(f"\tVMOVDQU      {xa}, Y10")
                p("\tVPSIGNB      Y6, Y10, Y10")
                p("\tVPMADDUBSW   Y10, Y11, Y8")
                p("\tVPMADDWD     Y13, Y8, Y8")
            else:
                p(f"\tVPMADDUBSW   {xa}, Y6, Y8")
                p("\tVPMADDWD     Y13, Y8, Y8")
                p(f"\tVPADDD       {na}, Y8, Y8")
            p("\tVCVTDQ2PS    Y8, Y8")
            p(f"\tVMULPS       {da}, Y7, Y9")
            p("\tVMULPS       Y9, Y8, Y8")
            p(f"\tVADDPS       Y8, {acc}, {acc}")
    p(f"\tADDQ ${bb}, SI")
    p("\tADDQ $192, BX")
    if f == "i4q8":
        p("\tDECQ AX")
        p(f"\tJNZ  {name}_same")
        p("\tADDQ $4, DI")
        p("\tMOVQ gb+48(FP), AX")
        p(f"{name}_same:")
    p("\tDECQ CX")
    p(f"\tJNZ  {name}_loop")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+24(FP), DX")
    p("\tSHLQ $2, DX")
    for t in range(6):
        hsum(f"Y{t}", f"X{t}", "X8")
        p(f"\tVMOVSS X{t}, (DI)")
        p("\tADDQ   DX, DI")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def q4k_tile_avx2(q5=False):
    name = "q5kTileAVX2" if q5 else "q4kTileAVX2"
    bb, qo = (176, 48) if q5 else (144, 16)
    p(f"// func {name}(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)")
    p("// q4kTileVNNI512 in ymm: one Q4_K row × tokens 0-3; Y0-Y3 the tokens' int")
    p("// sums, Y12 the 8 scale words in both lanes (picked per 32 values by")
    p("// qdk4s<>), X13 the mins, X10 X11 the float accumulators.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ cols+56(FP), R8")
    p("\tMOVQ x+16(FP), BX")
    p("\tLEAQ (BX)(R8*2), R9")
    p("\tADDQ R8, R9")
    p("\tMOVQ nb+48(FP), R11")
    p("\tSHLQ $2, R11")
    p("\tMOVQ xd+24(FP), R10")
    p("\tLEAQ (R10)(R11*2), R12")
    p("\tADDQ R11, R12")
    p("\tMOVQ R8, R14")
    p("\tSHRQ $3, R14")
    p("\tMOVQ xs+32(FP), R13")
    p("\tLEAQ (R13)(R14*2), AX")
    p("\tADDQ R14, AX")
    p("\tMOVQ nb+48(FP), CX")
    bytes_const("0x0f0f0f0f", "X15", "Y15", reg="DX")
    if q5:
        bytes_const("0x01010101", "X14", "Y14", reg="DX")
    p("\tVXORPS X10, X10, X10")
    p("\tVXORPS X11, X11, X11")
    p("\tTESTQ CX, CX")
    p(f"\tJZ    {name}_store")
    p(f"{name}_block:")
    p("\tVMOVQ       4(SI), X6")
    p("\tVMOVD       12(SI), X7")
    p("\tVPSRLW      $6, X6, X8")
    p("\tVPAND       qdk3<>(SB), X8, X8")
    p("\tVPSLLW      $4, X8, X8")
    p("\tVPAND       qdk3f<>(SB), X6, X6")
    p("\tVPSRLW      $4, X7, X9")
    p("\tVPAND       X15, X7, X7")
    p("\tVPAND       X15, X9, X9")
    p("\tVPUNPCKLDQ  X9, X7, X7")
    p("\tVPOR        X8, X7, X7")
    p("\tVPUNPCKLDQ  X7, X6, X6")
    p("\tVPMOVZXBW   X6, Y6")
    p("\tVEXTRACTI128 $1, Y6, X13")
    p("\tVINSERTI128 $1, X6, Y6, Y12")
    for t in range(4):
        p(f"\tVPXOR Y{t}, Y{t}, Y{t}")
    xa = ["(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(R9)"]
    if q5:
        p("\tVMOVDQU      16(SI), Y9")
    for j in range(4):
        p(f"\tVMOVDQU      {qo+32*j}(SI), Y4")
        p("\tVPSRLW       $4, Y4, Y5")
        p("\tVPAND        Y15, Y4, Y4")
        p("\tVPAND        Y15, Y5, Y5")
        if q5:
            p("\tVPAND        Y14, Y9, Y8")
            p("\tVPSLLW       $4, Y8, Y8")
            p("\tVPOR         Y8, Y4, Y4")
            p("\tVPSRLW       $1, Y9, Y8")
            p("\tVPAND        Y14, Y8, Y8")
            p("\tVPSLLW       $4, Y8, Y8")
            p("\tVPOR         Y8, Y5, Y5")
            p("\tVPSRLW       $2, Y9, Y9")
        p(f"\tVPSHUFB      qdk4s<>+{64*j}(SB), Y12, Y6")
        p(f"\tVPSHUFB      qdk4s<>+{64*j+32}(SB), Y12, Y7")
        for t in range(4):
            p(f"\tVPMADDUBSW   {64*j}{xa[t]}, Y4, Y8")
            p("\tVPMADDWD     Y6, Y8, Y8")
            p(f"\tVPADDD       Y8, Y{t}, Y{t}")
            p(f"\tVPMADDUBSW   {64*j+32}{xa[t]}, Y5, Y8")
            p("\tVPMADDWD     Y7, Y8, Y8")
            p(f"\tVPADDD       Y8, Y{t}, Y{t}")
    q4k_finish("X10", "X11")
    p(f"\tADDQ  ${bb}, SI")
    p("\tADDQ  $256, BX")
    p("\tADDQ  $256, R9")
    p("\tADDQ  $4, R10")
    p("\tADDQ  $4, R12")
    p("\tADDQ  $32, R13")
    p("\tADDQ  $32, AX")
    p("\tDECQ  CX")
    p(f"\tJNZ   {name}_block")
    p(f"{name}_store:")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+40(FP), DX")
    p("\tSHLQ $2, DX")
    p("\tLEAQ (DX)(DX*2), R8")
    p("\tVSUBPS       X11, X10, X0")
    p("\tVMOVSS       X0, (DI)")
    p("\tVEXTRACTPS   $1, X0, (DI)(DX*1)")
    p("\tVEXTRACTPS   $2, X0, (DI)(DX*2)")
    p("\tVEXTRACTPS   $3, X0, (DI)(R8*1)")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


p("// Code generated by qdot_gen.py (python3 qdot_gen.py > qdot_amd64.s); DO NOT EDIT.")
p()
p("//go:build amd64 && !purego")
p()
p('#include "textflag.h"')
p()
p("// Integer-dot block products; see qdot_gen.py.")
p()
p("// qdperm<>: VPERMT2Q indices making [A, A>>4, B, B>>4] (128-bit lanes) of")
p("// [A, -, B, -] and its shifted copy (indices 8-15 pick the second table).")
for i, v in enumerate([0, 1, 8, 9, 4, 5, 12, 13]):
    p(f"DATA qdperm<>+{8*i}(SB)/8, ${v}")
p("GLOBL qdperm<>(SB), RODATA|NOPTR, $64")
p()
p("// qdeo<>: VPSHUFB order putting a 128-bit lane's even bytes before its odd")
p("// ones (with VPERMQ $0xd8 after it: x's evens, then its odds).")
p("DATA qdeo<>+0(SB)/8, $0x0e0c0a0806040200")
p("DATA qdeo<>+8(SB)/8, $0x0f0d0b0907050301")
p("GLOBL qdeo<>(SB), RODATA|NOPTR, $16")
p()
p("// qdk4<> entry j (64 bytes): VPERMW indices [2j ×16 | 2j+1 ×16], the")
p("// scale words of 64 Q4_K/Q5_K values (low nibbles of sub-block 2j, high of")
p("// 2j+1); qdk6<> entry 2h+c: the 4 scales (of 16 values each) of Q6_K's")
p("// half h, values 64c..64c+63: [8h+4c ×8 | 8h+4c+1 ×8 | +2 ×8 | +3 ×8].")
for j in range(4):
    w = [2 * j] * 16 + [2 * j + 1] * 16
    for k in range(8):
        v = sum(w[4 * k + i] << (16 * i) for i in range(4))
        p(f"DATA qdk4<>+{64*j+8*k}(SB)/8, $0x{v:016x}")
p("GLOBL qdk4<>(SB), RODATA|NOPTR, $256")
for j in range(4):
    h, c2 = j // 2, j % 2
    w = []
    for g in range(4):
        w += [8 * h + 4 * c2 + g] * 8
    for k in range(8):
        v = sum(w[4 * k + i] << (16 * i) for i in range(4))
        p(f"DATA qdk6<>+{64*j+8*k}(SB)/8, $0x{v:016x}")
p("GLOBL qdk6<>(SB), RODATA|NOPTR, $256")
p("// qdk4s<> entry k (32 bytes): VPSHUFB picking word k of each 128-bit lane.")
for k in range(8):
    lo, hi = 2 * k, 2 * k + 1
    v = 0
    for i in range(4):
        v |= (lo | (hi << 8)) << (16 * i)
    for q in range(4):
        p(f"DATA qdk4s<>+{32*k+8*q}(SB)/8, $0x{v:016x}")
p("GLOBL qdk4s<>(SB), RODATA|NOPTR, $256")
p("// qdk6s<> entry c (32 bytes): VPSHUFB picking word 2c in the low lane and")
p("// 2c+1 in the high one (Q6_K: a 32-value chunk's two 16-value scales).")
for c in range(4):
    for lane, k in enumerate([2 * c, 2 * c + 1]):
        v = 0
        for i in range(4):
            v |= ((2 * k) | ((2 * k + 1) << 8)) << (16 * i)
        p(f"DATA qdk6s<>+{32*c+16*lane}(SB)/8, $0x{v:016x}")
        p(f"DATA qdk6s<>+{32*c+16*lane+8}(SB)/8, $0x{v:016x}")
p("GLOBL qdk6s<>(SB), RODATA|NOPTR, $128")
p("// qdk3<>, qdk3f<>: bytes 0x03 and 0x3f (Q4_K scale unpacking).")
p("DATA qdk3<>+0(SB)/8, $0x0303030303030303")
p("DATA qdk3<>+8(SB)/8, $0x0303030303030303")
p("GLOBL qdk3<>(SB), RODATA|NOPTR, $16")
p("DATA qdk3f<>+0(SB)/8, $0x3f3f3f3f3f3f3f3f")
p("DATA qdk3f<>+8(SB)/8, $0x3f3f3f3f3f3f3f3f")
p("GLOBL qdk3f<>(SB), RODATA|NOPTR, $16")
p()
for f in ["q40", "q50", "q80b", "i4q8"]:
    vnni512_matvec(f)
    vnni512_tile(f)
i8_tile()
for f in ["q4k", "q5k", "q6k"]:
    kquant512(f)
q4k_tile()
q4k_tile(q5=True)
for f in ["q40", "q80b", "i4q8"]:
    avx2_tile(f)
q4k_tile_avx2()
q4k_tile_avx2(q5=True)
q6k_tile()
q6k_tile_avx2()
avx2_i4q8()
sys.stdout.write("\n".join(out) + "\n")
