# Generates qdot_amd64.s: python3 qdot_gen.py > qdot_amd64.s.
#
# AVX-512 VNNI and AVX2 kernels of the per-row int8 product (MatMulI8's
# 4-row × 6-token tile) and of the K-quants (Q4_K, Q5_K, Q6_K: VNNI
# matvecs and the 1-row × 4-token tiles of both kernel sets; Q2_K, Q3_K:
# matvecs and 1-row × 4-token tiles of both); qblock.go,
# batch.go and qtile.go say what each computes. Every kernel keeps the float
# order of its Go version, so results are bitwise the same on every kernel
# set. (The 32-value-block formats have their own layout: ilblock_gen.py.)
#
# VPDPBUSD multiplies unsigned weight bytes by signed activation bytes, four
# per dword lane; signed weights are made unsigned by +128, which comes off
# as 128·Σx per lane.
import sys

from asmgen import out, p, hsum, bytes_const, header


# Block geometry: bytes per block, offset of the value bytes, the weight
# offset, whether the scale is an f16 at the block start (else float32 from
# ws, one per gb blocks).


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


def unpack_k_zmm(j, qo, q5):
    """Values 64j..64j+63 of a Q4_K/Q5_K block as bytes in Z4 (low nibbles
    of qs[32j..] then high ones; Q5_K's fifth bits from Z10, which moves on
    to the next pair), and their sub-blocks' scales as words in Z5 (from
    Z12 by the permutation in Z24+j)."""
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


def scales_mins_k4(dst, evex):
    """A Q4_K/Q5_K block's 8 6-bit scales and 8 mins (get_scale_min_k4) as
    words in dst: [sc0..sc7, m0..m7]. X15 holds 0x0f bytes; evex: the
    AVX-512 spelling of the masks' ANDs."""
    andop = "VPANDD" if evex else "VPAND "
    p("\tVMOVQ       4(SI), X6")
    p("\tVMOVD       12(SI), X7")
    p("\tVPSRLW      $6, X6, X8")
    p(f"\t{andop}      qdk3<>(SB), X8, X8")
    p("\tVPSLLW      $4, X8, X8")
    p(f"\t{andop}      qdk3f<>(SB), X6, X6")
    p("\tVPSRLW      $4, X7, X9")
    p("\tVPAND       X15, X7, X7")
    p("\tVPAND       X15, X9, X9")
    p("\tVPUNPCKLDQ  X9, X7, X7")
    p("\tVPOR        X8, X7, X7")
    p("\tVPUNPCKLDQ  X7, X6, X6")
    p(f"\tVPMOVZXBW   X6, {dst}")


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
    scales_mins_k4("Y6", evex=True)
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
        unpack_k_zmm(j, qo, q5)
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


def q4k_tile8(q5=False):
    """One Q4_K (Q5_K) row × 8 tokens: q4k_tile's unpacking shared by twice
    the tokens, and each super-block's 8 int sums, 8 min sums and float
    steps done once for the 8 tokens in the lanes of one register (dotQ4KGo's
    steps per lane), where the 4-token tile does them per 4."""
    name = "q5kTile8VNNI512" if q5 else "q4kTile8VNNI512"
    bb, qo = (176, 48) if q5 else (144, 16)
    p(f"// func {name}(out *float32, w *byte, x *int8, xp *byte, ldo, nb, cols int)")
    p("// One row × tokens 0-7 of a Q8_K activation (x rows cols bytes apart) into")
    p("// out[t*ldo]. xp holds per block 160 bytes (packK8): the 8 tokens' xd,")
    p("// then words [i][t][2] = the sums of sub-blocks 2i and 2i+1 of token t,")
    p("// pair-summed (4 i). Z16-Z23 the tokens' int sums (VPMADDUBSW +")
    p("// VPDPWSSD per 64 values, unpacked once: Z4, scale words Z5), Y28 Y29")
    p("// the float accumulators (scale, min) of the 8 tokens. Tokens 0-2 at BX")
    p("// + t·R8, 3 at R10, 4 at BX + 4·R8, 5-6 at R9 + R8, 2·R8, 7 at R10 + 4·R8.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-56")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ cols+48(FP), R8")
    p("\tMOVQ x+16(FP), BX")
    p("\tLEAQ (BX)(R8*4), R9")
    p("\tLEAQ (BX)(R8*2), R10")
    p("\tADDQ R8, R10")
    p("\tMOVQ xp+24(FP), R11")
    p("\tMOVQ nb+40(FP), CX")
    bytes_const("0x0f0f0f0f", "X15", "Z15", reg="DX")
    if q5:
        bytes_const("0x01010101", "X14", "Z14", reg="DX")
    for j in range(4):
        p(f"\tVMOVDQU64 qdk4<>+{64*j}(SB), Z{24+j}")
    p("\tVMOVDQU64 qdk8m<>(SB), Z30")
    p("\tVMOVDQU64 qdk8m<>+64(SB), Z31")
    p("\tVMOVDQU64 qdk8p<>(SB), Z13")
    p("\tVXORPS Y28, Y28, Y28")
    p("\tVXORPS Y29, Y29, Y29")
    p("\tTESTQ CX, CX")
    p(f"\tJZ    {name}_store")
    p(f"{name}_block:")
    # Scales and mins as words: Z12 = [sc0..sc7, m0..m7], upper lanes zero.
    scales_mins_k4("Y12", evex=True)
    for t in range(8):
        p(f"\tVPXORD Z{16+t}, Z{16+t}, Z{16+t}")
    xa = ["(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(R10)", "(BX)(R8*4)", "(R9)(R8*1)", "(R9)(R8*2)", "(R10)(R8*4)"]
    if q5:
        p("\tVMOVDQU      16(SI), Y10")
        p("\tVPSRLW       $1, Y10, Y11")
        p("\tVINSERTI64X4 $1, Y11, Z10, Z10")
    for j in range(4):
        unpack_k_zmm(j, qo, q5)
        for t in range(8):
            p(f"\tVPMADDUBSW   {64*j}{xa[t]}, Z4, Z{t%4}")
            p(f"\tVPDPWSSD     Z5, Z{t%4}, Z{16+t}")
    # msum of the 8 tokens: 2 VPMADDWD of the min pairs by the pair sums.
    p("\tVPERMW    Z12, Z30, Z0")
    p("\tVPERMW    Z12, Z31, Z1")
    p("\tVPMADDWD  32(R11), Z0, Z0")
    p("\tVPMADDWD  96(R11), Z1, Z1")
    p("\tVPADDD    Z1, Z0, Z0")
    p("\tVEXTRACTI64X4 $1, Z0, Y1")
    p("\tVPADDD    Y1, Y0, Y9")
    # isum: fold the 8 accumulators to [t0..t7] in Y8.
    for k in range(4):
        a, b = 16 + 2 * k, 17 + 2 * k
        p(f"\tVSHUFI64X2 $0x44, Z{b}, Z{a}, Z{k}")
        p(f"\tVSHUFI64X2 $0xee, Z{b}, Z{a}, Z{a}")
        p(f"\tVPADDD     Z{a}, Z{k}, Z{k}")
    for k in range(2):
        a, b = 2 * k, 2 * k + 1
        p(f"\tVSHUFI64X2 $0x88, Z{b}, Z{a}, Z{4+k}")
        p(f"\tVSHUFI64X2 $0xdd, Z{b}, Z{a}, Z{a}")
        p(f"\tVPADDD     Z{a}, Z{4+k}, Z{4+k}")
    # Z4 = [t0|t1|t2|t3], Z5 = [t4|..|t7], 4 lanes each.
    p("\tVPUNPCKLQDQ Z5, Z4, Z0")
    p("\tVPUNPCKHQDQ Z5, Z4, Z1")
    p("\tVPADDD      Z1, Z0, Z0")
    p("\tVPSHUFD     $0xb1, Z0, Z1")
    p("\tVPADDD      Z1, Z0, Z0")
    # Each 128 bits k now [t_k, t_k, t_k+4, t_k+4]: qdk8p<> puts them in order.
    p("\tVPERMD      Z0, Z13, Z8")
    # Floats: lane t of Y28 += float32(isum_t)·float32(d·xd_t), Y29 likewise.
    p("\tVPBROADCASTD (SI), X6")
    p("\tVCVTPH2PS    X6, X6")
    p("\tVBROADCASTSS X6, Y7")
    p("\tVMOVSHDUP    X6, X6")
    p("\tVBROADCASTSS X6, Y6")
    p("\tVMOVUPS      (R11), Y10")
    p("\tVMULPS       Y10, Y7, Y7")
    p("\tVMULPS       Y10, Y6, Y6")
    p("\tVCVTDQ2PS    Y8, Y8")
    p("\tVMULPS       Y7, Y8, Y8")
    p("\tVADDPS       Y8, Y28, Y28")
    p("\tVCVTDQ2PS    Y9, Y9")
    p("\tVMULPS       Y6, Y9, Y9")
    p("\tVADDPS       Y9, Y29, Y29")
    p(f"\tADDQ  ${bb}, SI")
    p("\tADDQ  $256, BX")
    p("\tADDQ  $256, R9")
    p("\tADDQ  $256, R10")
    p("\tADDQ  $160, R11")
    p("\tDECQ  CX")
    p(f"\tJNZ   {name}_block")
    p(f"{name}_store:")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+32(FP), DX")
    p("\tSHLQ $2, DX")
    p("\tVSUBPS       Y29, Y28, Y0")
    p("\tVEXTRACTF128 $1, Y0, X1")
    for h in range(2):
        for l in range(4):
            if l == 0:
                p(f"\tVMOVSS       X{h}, (DI)")
            else:
                p(f"\tVEXTRACTPS   ${l}, X{h}, (DI)")
            p("\tADDQ         DX, DI")
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
    scales_mins_k4("Y6", evex=False)
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


def k23_block(f, xa):
    """The integer work of one Q2_K or Q3_K super-block (SI) for len(xa)
    tokens (x at xa[t]) into Y0..: Σ sc·q·x per token, as dotQ2KGo
    (dotQ3KGo, values 0..7 before their -4). Each 32 value bytes (2
    sub-blocks, one per 128-bit lane) are unpacked once for every token;
    VPMADDUBSW, then VPMADDWD by the two sub-blocks' scales (qdk6s<> picks
    them from Y10, one half's 8 scale words in both lanes). Leaves the 16
    mins (Q2_K) or signed scales (Q3_K) as words in Y11 for the sums' term.
    Y14 holds 0x03 bytes, Y15 0x0f (Q2_K) or 0x01 (Q3_K) bytes."""
    if f == "q2k":
        p("\tVMOVDQU      (SI), X8")
        p("\tVPAND        X15, X8, X9")
        p("\tVPSRLW       $4, X8, X8")
        p("\tVPAND        X15, X8, X8")
        p("\tVPMOVZXBW    X9, Y9")
        p("\tVPMOVZXBW    X8, Y11")
        sw, qo = "Y9", 16
    else:
        # The 16 6-bit scales (ggml's kmask unpacking): dwords [a&0xf,
        # b&0xf, a>>4&0xf, b>>4&0xf] | (c>>2i&3)<<4 for a, b, c the 3 words.
        p("\tVMOVQ        96(SI), X6")
        p("\tVPBROADCASTD 104(SI), X7")
        p("\tVPSRLW       $4, X6, X8")
        p("\tVPUNPCKLQDQ  X8, X6, X6")
        p("\tVPAND        qdk0f<>(SB), X6, X6")
        p("\tVPSRLVD      qdk3v<>(SB), X7, X7")
        p("\tVPAND        qdk3<>(SB), X7, X7")
        p("\tVPSLLD       $4, X7, X7")
        p("\tVPOR         X7, X6, X6")
        p("\tVPSUBB       qdk20<>(SB), X6, X6")
        p("\tVPMOVSXBW    X6, Y11")
        p("\tVMOVDQU      (SI), Y13")
        sw, qo = "Y11", 32
    for t in range(len(xa)):
        p(f"\tVPXOR        Y{t}, Y{t}, Y{t}")
    for n in range(2):
        p(f"\tVPERMQ       ${0x44 if n == 0 else 0xee}, {sw}, Y10")
        p(f"\tVMOVDQU      {qo+32*n}(SI), Y7")
        for j in range(4):
            if j == 0:
                p("\tVPAND        Y14, Y7, Y4")
            else:
                p(f"\tVPSRLW       ${2*j}, Y7, Y4")
                p("\tVPAND        Y14, Y4, Y4")
            if f == "q3k":
                # Value bit 2: bit 4n+j of hmask[l], shifted down as it goes.
                p("\tVPAND        Y15, Y13, Y8")
                p("\tVPSLLW       $2, Y8, Y8")
                p("\tVPOR         Y8, Y4, Y4")
                if 4 * n + j < 7:
                    p("\tVPSRLW       $1, Y13, Y13")
            p(f"\tVPSHUFB      qdk6s<>+{32*j}(SB), Y10, Y5")
            for t in range(len(xa)):
                p(f"\tVPMADDUBSW   {128*n+32*j}{xa[t]}, Y4, Y6")
                p("\tVPMADDWD     Y5, Y6, Y6")
                p(f"\tVPADDD       Y6, Y{t}, Y{t}")


def k23_block512(f, xa):
    """k23_block in zmm (AVX-512 BW, VNNI): 64 values (4 sub-blocks, one per
    128-bit lane) unpacked at a time from [q | q>>2] of a 32-byte half,
    VPMADDUBSW then VPDPWSSD by their scales (VPERMW picks by qdk6<> in
    Z16-Z19, as Q6_K's). Q3_K's third bits come from Z13 = [hmask |
    hmask>>1], shifted down 2 a step. Ends with each token's int32 lanes
    folded into Y0.. as k23_block leaves them."""
    if f == "q2k":
        p("\tVMOVDQU      (SI), X8")
        p("\tVPAND        X15, X8, X9")
        p("\tVPSRLW       $4, X8, X8")
        p("\tVPAND        X15, X8, X8")
        p("\tVPMOVZXBW    X9, Y9")
        p("\tVPMOVZXBW    X8, Y11")
        sw, qo = "Z9", 16
    else:
        p("\tVMOVQ        96(SI), X6")
        p("\tVPBROADCASTD 104(SI), X7")
        p("\tVPSRLW       $4, X6, X8")
        p("\tVPUNPCKLQDQ  X8, X6, X6")
        p("\tVPAND        qdk0f<>(SB), X6, X6")
        p("\tVPSRLVD      qdk3v<>(SB), X7, X7")
        p("\tVPAND        qdk3<>(SB), X7, X7")
        p("\tVPSLLD       $4, X7, X7")
        p("\tVPOR         X7, X6, X6")
        p("\tVPSUBB       qdk20<>(SB), X6, X6")
        p("\tVPMOVSXBW    X6, Y11")
        p("\tVMOVDQU      (SI), Y13")
        p("\tVPSRLW       $1, Y13, Y10")
        p("\tVINSERTI64X4 $1, Y10, Z13, Z13")
        sw, qo = "Z11", 32
    for t in range(len(xa)):
        p(f"\tVPXORD       Z{t}, Z{t}, Z{t}")
    for n in range(2):
        p(f"\tVMOVDQU      {qo+32*n}(SI), Y7")
        p("\tVPSRLW       $2, Y7, Y6")
        p("\tVINSERTI64X4 $1, Y6, Z7, Z7")
        for c in range(2):
            if c == 0:
                p("\tVPANDD       Z14, Z7, Z4")
            else:
                p("\tVPSRLW       $4, Z7, Z4")
                p("\tVPANDD       Z14, Z4, Z4")
            if f == "q3k":
                p("\tVPANDD       Z15, Z13, Z8")
                p("\tVPSLLW       $2, Z8, Z8")
                p("\tVPORD        Z8, Z4, Z4")
                if 2 * n + c < 3:
                    p("\tVPSRLW       $2, Z13, Z13")
            p(f"\tVPERMW       {sw}, Z{16+2*n+c}, Z5")
            for t in range(len(xa)):
                p(f"\tVPMADDUBSW   {128*n+64*c}{xa[t]}, Z4, Z6")
                p(f"\tVPDPWSSD     Z5, Z6, Z{t}")
    for t in range(len(xa)):
        p(f"\tVEXTRACTI64X4 $1, Z{t}, Y4")
        p(f"\tVPADDD        Y4, Y{t}, Y{t}")


def k23_masks(f, reg, zmm=False):
    v = "Z" if zmm else "Y"
    bytes_const("0x03030303", "X14", v + "14", reg=reg)
    bytes_const("0x0f0f0f0f" if f == "q2k" else "0x01010101", "X15", v + "15", reg=reg)
    if zmm:
        for j in range(4):
            p(f"\tVMOVDQU64 qdk6<>+{64*j}(SB), Z{16+j}")


def reduce_y(y, x, t):
    """x lane 0 = the sum of y's 8 int32 lanes (x is y's low half)."""
    p(f"\tVEXTRACTI128 $1, {y}, {t}")
    p(f"\tVPADDD       {t}, {x}, {x}")
    p(f"\tVPSHUFD      $0x4e, {x}, {t}")
    p(f"\tVPADDD       {t}, {x}, {x}")
    p(f"\tVPSHUFD      $0xb1, {x}, {t}")
    p(f"\tVPADDD       {t}, {x}, {x}")


def k23_dots(f, zmm=False):
    """Q2_K or Q3_K × Q8_K, one row at a time: k23_block (zmm:
    k23_block512), then dotQ2KGo's (dotQ3KGo's) float steps for the
    super-block."""
    name = f"{f}DotsVNNI512" if zmm else {"q2k": "q2KDotsAVX2", "q3k": "q3KDotsAVX2"}[f]
    bb = {"q2k": 84, "q3k": 110}[f]
    p(f"// func {name}(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)")
    p("// out[r] = dot(row r, Q8_K x). SI block, BX x, R10 xd, R13 x sums, CX")
    p("// blocks left, DX rows left, DI out; X12 (X13) the scale (min) accumulator.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-56")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ rows+40(FP), DX")
    k23_masks(f, "AX", zmm)
    p(f"{name}_row:")
    p("\tTESTQ  DX, DX")
    p(f"\tJZ     {name}_done")
    p("\tMOVQ   x+16(FP), BX")
    p("\tMOVQ   xd+24(FP), R10")
    p("\tMOVQ   xs+32(FP), R13")
    p("\tMOVQ   nb+48(FP), CX")
    p("\tVXORPS X12, X12, X12")
    if f == "q2k":
        p("\tVXORPS X13, X13, X13")
    p("\tTESTQ  CX, CX")
    p(f"\tJZ     {name}_store")
    p(f"{name}_block:")
    (k23_block512 if zmm else k23_block)(f, ["(BX)"])
    reduce_y("Y0", "X0", "X4")
    p("\tVPMADDWD     (R13), Y11, Y5")
    reduce_y("Y5", "X5", "X4")
    if f == "q2k":
        p("\tVMOVD        80(SI), X8")
        p("\tVCVTPH2PS    X8, X8")
        p("\tVBROADCASTSS (R10), X9")
        p("\tVMULPS       X9, X8, X8")
        p("\tVCVTDQ2PS    X0, X0")
        p("\tVMULSS       X8, X0, X0")
        p("\tVADDSS       X0, X12, X12")
        p("\tVMOVSHDUP    X8, X8")
        p("\tVCVTDQ2PS    X5, X5")
        p("\tVMULSS       X8, X5, X5")
        p("\tVADDSS       X5, X13, X13")
    else:
        p("\tVPSLLD       $2, X5, X5")
        p("\tVPSUBD       X5, X0, X0")
        p("\tVPBROADCASTW 108(SI), X8")
        p("\tVCVTPH2PS    X8, X8")
        p("\tVMULSS       (R10), X8, X8")
        p("\tVCVTDQ2PS    X0, X0")
        p("\tVMULSS       X8, X0, X0")
        p("\tVADDSS       X0, X12, X12")
    p(f"\tADDQ  ${bb}, SI")
    p("\tADDQ  $256, BX")
    p("\tADDQ  $4, R10")
    p("\tADDQ  $32, R13")
    p("\tDECQ  CX")
    p(f"\tJNZ   {name}_block")
    p(f"{name}_store:")
    if f == "q2k":
        p("\tVSUBSS X13, X12, X12")
    p("\tVMOVSS X12, (DI)")
    p("\tADDQ   $4, DI")
    p("\tDECQ   DX")
    p(f"\tJMP    {name}_row")
    p(f"{name}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def k23_tile(f, zmm=False):
    """One Q2_K or Q3_K row × 4 tokens (kx_prologue's registers): k23_block
    (zmm: k23_block512) for the 4 tokens, then each super-block ended for
    them at once in the lanes of X12 (scale) and X13 (min, Q2_K), in
    dotQ2KGo's (dotQ3KGo's) float steps."""
    name = f"{f}TileVNNI512" if zmm else f"{f}TileAVX2"
    bb = {"q2k": 84, "q3k": 110}[f]
    p(f"// func {name}(out *float32, w *byte, x *int8, xd *float32, xs *int16, ldo, nb, cols int)")
    p(f"// One {f[:2].upper()}_K row × tokens 0-3 of a Q8_K activation into out[t*ldo]:")
    p("// each 32 values unpacked once for the 4 tokens' sums in Y0-Y3.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
    kx_prologue(name, bb)
    k23_masks(f, "DX", zmm)
    p("\tVXORPS X12, X12, X12")
    if f == "q2k":
        p("\tVXORPS X13, X13, X13")
    p("\tTESTQ CX, CX")
    p(f"\tJZ    {name}_store")
    p(f"{name}_block:")
    (k23_block512 if zmm else k23_block)(f, ["(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(R9)"])
    p("\tVPHADDD      Y1, Y0, Y4")
    p("\tVPHADDD      Y3, Y2, Y5")
    p("\tVPHADDD      Y5, Y4, Y4")
    p("\tVEXTRACTI128 $1, Y4, X5")
    p("\tVPADDD       X5, X4, X4")
    p("\tVPMADDWD     (R13), Y11, Y5")
    p("\tVPMADDWD     (R13)(R14*1), Y11, Y6")
    p("\tVPMADDWD     (R13)(R14*2), Y11, Y7")
    p("\tVPMADDWD     (AX), Y11, Y8")
    p("\tVPHADDD      Y6, Y5, Y5")
    p("\tVPHADDD      Y8, Y7, Y7")
    p("\tVPHADDD      Y7, Y5, Y5")
    p("\tVEXTRACTI128 $1, Y5, X6")
    p("\tVPADDD       X6, X5, X5")
    p("\tVMOVSS       (R10), X6")
    p("\tVINSERTPS    $0x10, (R10)(R11*1), X6, X6")
    p("\tVINSERTPS    $0x20, (R10)(R11*2), X6, X6")
    p("\tVINSERTPS    $0x30, (R12), X6, X6")
    if f == "q2k":
        p("\tVMOVD        80(SI), X8")
        p("\tVCVTPH2PS    X8, X8")
        p("\tVBROADCASTSS X8, X9")
        p("\tVMOVSHDUP    X8, X8")
        p("\tVBROADCASTSS X8, X8")
        p("\tVMULPS       X6, X9, X9")
        p("\tVMULPS       X6, X8, X8")
        p("\tVCVTDQ2PS    X4, X4")
        p("\tVMULPS       X9, X4, X4")
        p("\tVADDPS       X4, X12, X12")
        p("\tVCVTDQ2PS    X5, X5")
        p("\tVMULPS       X8, X5, X5")
        p("\tVADDPS       X5, X13, X13")
    else:
        p("\tVPSLLD       $2, X5, X5")
        p("\tVPSUBD       X5, X4, X4")
        p("\tVPBROADCASTW 108(SI), X8")
        p("\tVCVTPH2PS    X8, X8")
        p("\tVMULPS       X6, X8, X8")
        p("\tVCVTDQ2PS    X4, X4")
        p("\tVMULPS       X8, X4, X4")
        p("\tVADDPS       X4, X12, X12")
    kx_epilogue(name, bb, "X12", "X13" if f == "q2k" else None)


def quant_q8k():
    """QuantizeQ8_K in ymm, bitwise qblock.go's loop for every input: amax
    by VMAXPS with the running max as the operand returned on a NaN (Go's
    a > amax skips NaNs too), and the first |x| equal to it gives the sign;
    q = int8(min(127, nearestInt(iscale·x))) by nearestInt's own bit trick
    (add 1.5·2^23, mantissa - 2^22) and int8's truncation (mask, then
    unsigned packs), so NaN and ±Inf products give Go's bytes too; the sums
    of 16 by VPMADDUBSW and VPMADDWD with ones."""
    name = "quantQ8KAVX2"
    p(f"// func {name}(q *int8, d *float32, sums *int16, x *float32, nb int)")
    p("// SI x, DI q, R8 d, R9 sums, CX blocks left; Y15 the |x| mask, Y14")
    p("// 1.5·2^23, Y13 0x7fffff, Y12 2^22, Y11 127, Y10 0xff, Y9 qq8perm<>,")
    p("// Y8 iscale.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-40")
    p("\tMOVQ q+0(FP), DI")
    p("\tMOVQ d+8(FP), R8")
    p("\tMOVQ sums+16(FP), R9")
    p("\tMOVQ x+24(FP), SI")
    p("\tMOVQ nb+32(FP), CX")
    bytes_const("0x7fffffff", "X15", "Y15")
    bytes_const("0x4b400000", "X14", "Y14")
    bytes_const("0x007fffff", "X13", "Y13")
    bytes_const("0x00400000", "X12", "Y12")
    bytes_const("127", "X11", "Y11")
    bytes_const("255", "X10", "Y10")
    p("\tVMOVDQU qq8perm<>(SB), Y9")
    p("\tTESTQ CX, CX")
    p(f"\tJZ    {name}_done")
    p(f"{name}_block:")
    # amax: 4 running maxima, then the block's in every lane of Y0.
    for k in range(4):
        p(f"\tVXORPS Y{k}, Y{k}, Y{k}")
    for i in range(32):
        p(f"\tVANDPS {32*i}(SI), Y15, Y4")
        p(f"\tVMAXPS Y{i%4}, Y4, Y{i%4}")
    p("\tVMAXPS Y1, Y0, Y0")
    p("\tVMAXPS Y3, Y2, Y2")
    p("\tVMAXPS Y2, Y0, Y0")
    p("\tVPERM2F128 $1, Y0, Y0, Y1")
    p("\tVMAXPS Y1, Y0, Y0")
    p("\tVSHUFPS $0x4e, Y0, Y0, Y1")
    p("\tVMAXPS Y1, Y0, Y0")
    p("\tVSHUFPS $0xb1, Y0, Y0, Y1")
    p("\tVMAXPS Y1, Y0, Y0")
    p("\tVXORPS X1, X1, X1")
    p("\tVUCOMISS X1, X0")
    p(f"\tJEQ   {name}_zero")
    # mx = x[i] for the first i with |x[i]| == amax.
    p("\tXORQ AX, AX")
    p(f"{name}_find:")
    p("\tVANDPS    (SI)(AX*4), Y15, Y4")
    p("\tVCMPPS    $0, Y0, Y4, Y4")
    p("\tVMOVMSKPS Y4, DX")
    p("\tTESTL     DX, DX")
    p(f"\tJNZ       {name}_found")
    p("\tADDQ      $8, AX")
    p(f"\tJMP       {name}_find")
    p(f"{name}_found:")
    p("\tBSFL   DX, DX")
    p("\tADDQ   DX, AX")
    p("\tMOVL   $0xc2fe0000, DX")  # -127
    p("\tVMOVD  DX, X0")
    p("\tVDIVSS (SI)(AX*4), X0, X0")
    p("\tMOVL   $0x3f800000, DX")  # 1
    p("\tVMOVD  DX, X1")
    p("\tVDIVSS X0, X1, X1")
    p("\tVMOVSS X1, (R8)")
    p("\tVBROADCASTSS X0, Y8")
    # 32 values at a time (Y0-Y3) to 32 bytes; Y4-Y7 the sums of 4 of four
    # such chunks, then their 8 sums of 16 (as VPHADDD leaves them:
    # [g0 g2 g4 g6 | g1 g3 g5 g7], put in order by qq8perm<>).
    for c in range(8):
        for k in range(4):
            p(f"\tVMULPS  {128*c+32*k}(SI), Y8, Y{k}")
            p(f"\tVADDPS  Y14, Y{k}, Y{k}")
            p(f"\tVPAND   Y13, Y{k}, Y{k}")
            p(f"\tVPSUBD  Y12, Y{k}, Y{k}")
            p(f"\tVPMINSD Y11, Y{k}, Y{k}")
            p(f"\tVPAND   Y10, Y{k}, Y{k}")
        p("\tVPACKUSDW Y1, Y0, Y0")
        p("\tVPACKUSDW Y3, Y2, Y2")
        p("\tVPACKUSWB Y2, Y0, Y0")
        p("\tVPERMD    Y0, Y9, Y0")
        p(f"\tVMOVDQU   Y0, {32*c}(DI)")
        p("\tVPCMPEQW   Y1, Y1, Y1")
        p("\tVPABSB     Y1, Y2")
        p("\tVPMADDUBSW Y0, Y2, Y0")
        p("\tVPABSW     Y1, Y1")
        p(f"\tVPMADDWD   Y1, Y0, Y{4+c%4}")
        if c % 4 == 3:
            p("\tVPHADDD   Y5, Y4, Y4")
            p("\tVPHADDD   Y7, Y6, Y6")
            p("\tVPHADDD   Y6, Y4, Y4")
            p("\tVPERMD    Y4, Y9, Y4")
            p("\tVPACKSSDW Y4, Y4, Y4")
            p("\tVPERMQ    $0x08, Y4, Y4")
            p(f"\tVMOVDQU   X4, {16*(c//4)}(R9)")
    p(f"{name}_next:")
    p("\tADDQ $1024, SI")
    p("\tADDQ $256, DI")
    p("\tADDQ $4, R8")
    p("\tADDQ $32, R9")
    p("\tDECQ CX")
    p(f"\tJNZ  {name}_block")
    p(f"{name}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p(f"{name}_zero:")
    p("\tVPXOR   Y0, Y0, Y0")
    for i in range(8):
        p(f"\tVMOVDQU Y0, {32*i}(DI)")
    p("\tVMOVDQU Y0, (R9)")
    p("\tMOVL    $0, (R8)")
    p(f"\tJMP     {name}_next")
    p()


header("qdot_gen.py", "qdot_amd64.s")
p("// Integer-dot block products; see qdot_gen.py.")
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
p("// qdk0f<>, qdk20<>: bytes 0x0f and 0x20; qdk3v<>: dwords 0 2 4 6 (Q3_K")
p("// scale unpacking).")
p("DATA qdk0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f")
p("DATA qdk0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f")
p("GLOBL qdk0f<>(SB), RODATA|NOPTR, $16")
p("DATA qdk20<>+0(SB)/8, $0x2020202020202020")
p("DATA qdk20<>+8(SB)/8, $0x2020202020202020")
p("GLOBL qdk20<>(SB), RODATA|NOPTR, $16")
for i, v in enumerate([0, 2, 4, 6]):
    p(f"DATA qdk3v<>+{4*i}(SB)/4, ${v}")
p("GLOBL qdk3v<>(SB), RODATA|NOPTR, $16")
p("// qq8perm<>: VPERMD dwords 0 4 1 5 2 6 3 7, undoing the lane split of the")
p("// packs and of VPHADDD.")
for i, v in enumerate([0, 4, 1, 5, 2, 6, 3, 7]):
    p(f"DATA qq8perm<>+{4*i}(SB)/4, ${v}")
p("GLOBL qq8perm<>(SB), RODATA|NOPTR, $32")
p("// qdk8m<>: VPERMW picks of the mins (words 8-15 of the scale register)")
p("// for q4k_tile8's two VPMADDWD: dword lanes 0-7 the pair (m_4h, m_4h+1),")
p("// lanes 8-15 (m_4h+2, m_4h+3), for h = 0, 1.")
for h in range(2):
    w = []
    for i in (2 * h, 2 * h + 1):
        w += [8 + 2 * i, 8 + 2 * i + 1] * 8
    for k in range(8):
        v = sum(w[4 * k + i] << (16 * i) for i in range(4))
        p(f"DATA qdk8m<>+{64*h+8*k}(SB)/8, $0x{v:016x}")
p("GLOBL qdk8m<>(SB), RODATA|NOPTR, $128")
p("// qdk8p<>: VPERMD taking lanes 4k (token k) and 4k+2 (token k+4) in order.")
for i, v in enumerate([0, 4, 8, 12, 2, 6, 10, 14] + [0] * 8):
    p(f"DATA qdk8p<>+{4*i}(SB)/4, ${v}")
p("GLOBL qdk8p<>(SB), RODATA|NOPTR, $64")
p()
i8_tile()
for f in ["q4k", "q5k", "q6k"]:
    kquant512(f)
q4k_tile()
q4k_tile(q5=True)
q4k_tile8()
q4k_tile8(q5=True)
q4k_tile_avx2()
q4k_tile_avx2(q5=True)
q6k_tile()
q6k_tile_avx2()
for f in ["q2k", "q3k"]:
    for zmm in (False, True):
        k23_dots(f, zmm)
        k23_tile(f, zmm)
quant_q8k()
sys.stdout.write("\n".join(out) + "\n")
