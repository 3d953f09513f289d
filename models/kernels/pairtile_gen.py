# Generates pairtile_amd64.s: python3 pairtile_gen.py > pairtile_amd64.s.
#
# AVX-512 register tiles of the batched float products (MatMul; MatMulF16IL
# and MatMulBF16IL on interleaved weights) for
# any number of tokens, each output bitwise matVecAVX2's: one zmm holds one
# weight row with two tokens, token 2p in the low 8 lanes and 2p+1 in the
# high 8, so every (row, token) keeps its own 8-lane FMA chain over the
# columns 8 at a time and the same HSUM at the end. A tile is R rows × P
# token pairs (R·P accumulators); each 8-column weight chunk is loaded once,
# duplicated into both halves (VBROADCASTF64X4, or for f16 and bf16
# VBROADCASTI32X4 then widen, exact) and used for P pairs; each pair chunk (packed once
# per call by packPairsF32: 8 floats of token 2p, then 8 of 2p+1, zero past
# the row's end or a missing last token) is loaded once for R rows.
#
# The last cols%8 columns: the weights by a masked load (lanes past the row
# are +0 and never touched) and the packed activations' zeros, as
# matVecAVX2's masked tail gives +0·+0 in those lanes.
import sys

from asmgen import out, p, hsum, header

# PF is how far ahead (bytes) each weight row is prefetched, once per 64-byte
# line: a decode step streams every weight from memory while the tile's
# FMAs keep the core busy, and the hardware prefetcher alone left the
# 8-token tile at about 60% of MatVec's streaming speed (4 KiB measured best
# of 1-8 KiB on the AVX-512 host).
PF = 4096
# RPF: the same for the row-pair matvec (each of its 8 rows, once per 32
# bytes): a decode step reads every weight once, and with it the float32
# decode of bench110M read 25-26 GB/s of weights against 17-22 without
# (BenchmarkStream: 32-34 on one core).
RPF = 4096


ROWS = ["SI", "R8", "R9", "R12", "R13", "R14"]

# The weight kinds: float32 row-major, f16 and bf16 (2 bytes, widened
# exactly) interleaved.
KINDS = ("F32", "F16", "BF16")


def widen(kind, src, dst):
    """dst (a ymm or zmm) = the halves in src (the xmm or ymm of the same
    number) as floats: VCVTPH2PS, or for bf16 each word zero-extended to a
    dword and shifted up 16 bits (a bfloat16 is the top half of its float)."""
    if kind == "F16":
        p(f"\tVCVTPH2PS {src}, {dst}")
    else:
        p(f"\tVPMOVZXWD {src}, {dst}")
        p(f"\tVPSLLD    $16, {dst}, {dst}")


def tile(R, P, kind):
    """f16 and bf16 weights are interleaved (f16il.go): a row's chunks 256
    bytes apart. A tile reads 16·R bytes of each 256, which the hardware
    prefetcher does not follow: its lines are prefetched PF ahead (without
    it the 8-token step ran at half the row-major tiles' speed)."""
    half = kind != "F32"
    il = half
    name = f"pair{'IL' if il else ''}{kind}R{R}P{P}"
    eb = 2 if half else 4  # weight bytes per element
    cs = 256 if il else 8 * eb  # bytes from one 8-column chunk to the next
    acc = lambda r, q: r * P + q
    xr = lambda q: 24 + q
    wr = lambda r: 28 + (r & 1)
    p(f"// func {name}(out *float32, w unsafe.Pointer, xp *float32, cols, ldo, ws, ps, odd int)")
    p(f"// {R} weight rows (ws bytes apart) × {P} packed token pairs (ps bytes apart);")
    p("// out[t*ldo+r]; odd != 0 leaves out the last pair's second token.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ ws+40(FP), DX")
    for r in range(1, R):
        p(f"\tLEAQ ({ROWS[r-1]})(DX*1), {ROWS[r]}")
    p("\tMOVQ xp+16(FP), BX")
    p("\tMOVQ ps+48(FP), R10")
    if P > 3:
        p("\tLEAQ (BX)(R10*2), R11")
        p("\tADDQ R10, R11")
    for i in range(R * P):
        p(f"\tVXORPS Z{i}, Z{i}, Z{i}")
    p("\tXORQ AX, AX")
    p("\tMOVQ cols+24(FP), CX")
    p("\tSHRQ $3, CX")
    p(f"\tJZ   {name}_tail")
    xaddr = ["(BX)", "(BX)(R10*1)", "(BX)(R10*2)", "(R11)"]

    def chunk(u, pf):
        """One 8-column chunk at AX + u chunks: P pair loads, R weight
        loads, R·P FMAs; pf prefetches each row PF bytes ahead."""
        for q in range(P):
            p(f"\tVMOVUPS {64*u}{xaddr[q]}, Z{xr(q)}")
        for r in range(R):
            w = wr(r)
            if pf and not il:
                p(f"\tPREFETCHT0 {PF + u*cs}({ROWS[r]})(AX*1)")
            if il and r == 0:
                # The lines of this tile's 16·R bytes of the chunk: at most
                # two (the tiles start at rows 0, 6 and 12 of a group).
                p(f"\tPREFETCHT0 {PF + u*cs}(SI)(AX*1)")
                if R > 1:
                    p(f"\tPREFETCHT0 {PF + u*cs + 16*R - 1}(SI)(AX*1)")
            if half:
                p(f"\tVBROADCASTI32X4 {u*cs}({ROWS[r]})(AX*1), Y{w}")
                widen(kind, f"Y{w}", f"Z{w}")
            else:
                p(f"\tVBROADCASTF64X4 {u*cs}({ROWS[r]})(AX*1), Z{w}")
            for q in range(P):
                p(f"\tVFMADD231PS Z{xr(q)}, Z{w}, Z{acc(r, q)}")

    # U chunks per iteration cover one 64-byte line of each row, prefetched
    # once; then single chunks.
    U = 64 // (8 * eb)
    p("\tCMPQ CX, $%d" % U)
    p(f"\tJLT  {name}_one")
    p(f"{name}_loop:")
    for u in range(U):
        chunk(u, u == 0 or il)
    p(f"\tADDQ ${U*cs}, AX")
    p(f"\tADDQ ${U*64}, BX")
    if P > 3:
        p(f"\tADDQ ${U*64}, R11")
    p(f"\tSUBQ ${U}, CX")
    p(f"\tCMPQ CX, ${U}")
    p(f"\tJGE  {name}_loop")
    p(f"{name}_one:")
    p("\tTESTQ CX, CX")
    p(f"\tJZ   {name}_tail")
    chunk(0, False)
    p(f"\tADDQ ${cs}, AX")
    p("\tADDQ $64, BX")
    if P > 3:
        p("\tADDQ $64, R11")
    p("\tDECQ CX")
    p(f"\tJMP  {name}_one")
    p(f"{name}_tail:")
    p("\tMOVQ cols+24(FP), CX")
    p("\tANDQ $7, CX")
    p(f"\tJZ   {name}_store")
    p("\tMOVL $1, DX")
    p("\tSHLL CX, DX")
    p("\tDECL DX")
    p("\tKMOVW DX, K1")
    for q in range(P):
        p(f"\tVMOVUPS {xaddr[q]}, Z{xr(q)}")
    for r in range(R):
        w = wr(r)
        if half:
            p(f"\tVMOVDQU16.Z ({ROWS[r]})(AX*1), K1, X{w}")
            widen(kind, f"X{w}", f"Y{w}")
        else:
            p(f"\tVMOVUPS.Z ({ROWS[r]})(AX*1), K1, Y{w}")
        p(f"\tVINSERTF64X4 $1, Y{w}, Z{w}, Z{w}")
        for q in range(P):
            p(f"\tVFMADD231PS Z{xr(q)}, Z{w}, Z{acc(r, q)}")
    p(f"{name}_store:")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+32(FP), DX")
    p("\tSHLQ $2, DX")
    for q in range(P):
        for r in range(R):
            a = acc(r, q)
            p(f"\tVEXTRACTF32X8 $1, Z{a}, Y{24+r}")
            hsum(f"Y{a}", f"X{a}", "X31")
            p(f"\tVMOVSS X{a}, {4*r}(DI)")
        if q == P - 1:
            p("\tCMPQ odd+56(FP), $0")
            p(f"\tJNE  {name}_done")
        for r in range(R):
            hsum(f"Y{24+r}", f"X{24+r}", "X31")
            p(f"\tVMOVSS X{24+r}, {4*r}(DI)(DX*1)")
        p("\tLEAQ (DI)(DX*2), DI")
    p(f"{name}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def rowpair():
    """MatVec on AVX-512: 8 rows, zmm k holding rows k (low half) and k+4
    (high half) against the same 8 activations in both halves, so each row
    keeps matVecAVX2's one 8-lane FMA chain. Row pointers advance; rows
    4..7 are at +4·ws from rows 0..3."""
    name = "rowPairF32"
    p(f"// func {name}(out *float32, w unsafe.Pointer, x *float32, cols, ws int)")
    p("// out[0..7] = rows 0..7 (ws bytes apart) · x[:cols].")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-40")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ ws+32(FP), DX")
    p("\tLEAQ (SI)(DX*1), R8")
    p("\tLEAQ (SI)(DX*2), R9")
    p("\tLEAQ (R8)(DX*2), R10")
    p("\tLEAQ (DX*4), R11")
    p("\tMOVQ x+16(FP), BX")
    ptr = ["SI", "R8", "R9", "R10"]
    for k in range(4):
        p(f"\tVXORPS Z{k}, Z{k}, Z{k}")
    p("\tMOVQ cols+24(FP), CX")
    p("\tSHRQ $3, CX")
    p(f"\tJZ   {name}_tail")
    p(f"{name}_loop:")
    if RPF:
        for k in range(4):
            p(f"\tPREFETCHT0 {RPF}({ptr[k]})")
            p(f"\tPREFETCHT0 {RPF}({ptr[k]})(R11*1)")
    p("\tVBROADCASTF32X8 (BX), Z8")
    for k in range(4):
        t = 10 + k
        p(f"\tVMOVUPS      ({ptr[k]}), Y{t}")
        p(f"\tVINSERTF32X8 $1, ({ptr[k]})(R11*1), Z{t}, Z{t}")
        p(f"\tVFMADD231PS Z8, Z{t}, Z{k}")
    for k in range(4):
        p(f"\tADDQ $32, {ptr[k]}")
    p("\tADDQ $32, BX")
    p("\tDECQ CX")
    p(f"\tJNZ  {name}_loop")
    p(f"{name}_tail:")
    p("\tMOVQ cols+24(FP), CX")
    p("\tANDQ $7, CX")
    p(f"\tJZ   {name}_store")
    p("\tMOVL $1, AX")
    p("\tSHLL CX, AX")
    p("\tDECL AX")
    p("\tKMOVW AX, K1")
    p("\tVMOVUPS.Z (BX), K1, Y8")
    p("\tVINSERTF32X8 $1, Y8, Z8, Z8")
    for k in range(4):
        t = 10 + k
        p(f"\tVMOVUPS.Z ({ptr[k]}), K1, Y{t}")
        p(f"\tVMOVUPS.Z ({ptr[k]})(R11*1), K1, Y14")
        p(f"\tVINSERTF32X8 $1, Y14, Z{t}, Z{t}")
        p(f"\tVFMADD231PS Z8, Z{t}, Z{k}")
    p(f"{name}_store:")
    p("\tMOVQ out+0(FP), DI")
    for k in range(4):
        p(f"\tVEXTRACTF32X8 $1, Z{k}, Y{24+k}")
        hsum(f"Y{k}", f"X{k}", "X31")
        p(f"\tVMOVSS X{k}, {4*k}(DI)")
        hsum(f"Y{24+k}", f"X{24+k}", "X31")
        p(f"\tVMOVSS X{24+k}, {4*(k+4)}(DI)")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


header("pairtile_gen.py", "pairtile_amd64.s")
for kind in KINDS:
    for R in (1, 4, 6):
        for P in (1, 2, 3, 4):
            tile(R, P, kind)
    if kind == "F32":
        rowpair()
sys.stdout.write("\n".join(out))
