#!/usr/bin/env python3
"""Writes attnrows_amd64.s: attention over a float32, f16, int8, fp8 (E4M3)
or int4 KV cache, every head of a row at a time, the stored values decoded
in registers (int4: its own section below).

    cd models/kernels && python3 attnrows_gen.py > attnrows_amd64.s

Why rows: a head at a time strides through the cache, reading 128 bytes of
each 1.5 KB f16 row (64 of an int8 row, 256 of a float32 one) a pass,
which the hardware prefetchers do not keep up with; a row at a time reads
memory in order, about twice as fast for f16 and 15 % for float32
(BenchmarkAttnColdKV), and prefetches the rows AHEAD of it.

Bits: a value decodes as the float32 cache path decodes it (f16: VCVTPH2PS,
exact; int8: float32(code)·scale, VPMOVSXBD, VCVTDQ2PS, VMULPS, as ScaleI8;
fp8: a half built from the code, times scale·256, as DequantizeFP8),
a score is one 8-lane FMA accumulator over the head and attnScoresAVX2's
HSUM, and an output element takes its rows' FMAs in row order: the bits of
AttnScores and AttnMixAdd on the decoded rows. The float32, f16 and int8
mixes have AVX-512 twins, 16 columns a vector for heads a multiple of 16
wide: the same FMAs of each element in the same order, so the same bits,
with half the instructions (f16 rows not in cache, a query's scores and
mix: 1.07x faster, BenchmarkAttnColdKV pairs in one process).

The families take the same arguments (the float32 and f16 ones ignore sc
and hkv), so they share every frame offset:

    scores(scores, q *float32, k unsafe.Pointer (*T), sc *float32, kvh *int32, heads, d, n, sstride, kstride, hkv int, scale float32)
    mix(out, w *float32, v unsafe.Pointer (*T), sc *float32, kvh *int32, heads, d, n, wstride, vstride, hkv int)

sstride and wstride in bytes, kstride and vstride in elements; query head
h's key (value) in row t starts at element t·kstride + kvh[h]·d, its int8
or fp8 scale at sc[t·hkv + kvh[h]].
"""
import asmgen
from asmgen import out, p, header

# element type: name, bytes a value, log2 of that, decode(memory operand, dst, scale)
TYPES = [
    ("F32", "float32", 4, 2, lambda src, dst, sc: [f"VMOVUPS     {src}, {dst}"]),
    ("F16", "uint16", 2, 1, lambda src, dst, sc: [f"VCVTPH2PS   {src}, {dst}"]),
    ("I8", "int8", 1, 0, lambda src, dst, sc: [f"VPMOVSXBD   {src}, {dst}",
                                               f"VCVTDQ2PS   {dst}, {dst}",
                                               f"VMULPS      {sc}, {dst}, {dst}"]),
    # E4M3 as kernels.DequantizeFP8 reads it: the sign-extended code shifted
    # left 7 and masked (0xbf80) is a half of value/256, so its float32 times
    # scale·256 (the scale registers hold that, exactly) is the value.
    ("FP8", "uint8", 1, 0, lambda src, dst, sc: [f"VPMOVSXBW   {src}, X{dst[1:]}",
                                                f"VPSLLW      $7, X{dst[1:]}, X{dst[1:]}",
                                                f"VPAND       fp8mask<>(SB), X{dst[1:]}, X{dst[1:]}",
                                                f"VCVTPH2PS   X{dst[1:]}, {dst}",
                                                f"VMULPS      {sc}, {dst}, {dst}"]),
]

# The families whose values carry a scale per row and KV head.
SCALED = ("I8", "FP8")

# The families with an AVX-512 mix as well (FP8's decode is written for
# 8 lanes).
WIDE_MIX = ("F32", "F16", "I8")

def hsum(acc, tmp):
    """acc's 8 lanes summed in HSUM's order, times the scale, stored and
    the scores pointer moved to the next head."""
    x, t = "X" + acc[1:], "X" + tmp[1:]
    asmgen.hsum(acc, x, t)
    p(f"\tVMULSS       scale+88(FP), {x}, {x}")
    p(f"\tVMOVSS       {x}, (R11)")
    p("\tADDQ         sstride+64(FP), R11")


# Rows fetched ahead: a sequence's cache is blocks of 16 rows scattered in
# the pool, and the hardware prefetchers lose the stream at every block's
# end; a software prefetch of row t+AHEAD (past the run's end it touches
# rows soon read anyway, or nothing harmful) keeps the reads flowing.
AHEAD = 4


def prefetch(L, stride, rows=1):
    """PREFETCHT0 every line of rows t+AHEAD..t+AHEAD+rows-1 (stride: a
    register holding a row's bytes, not R14 or R15, which it uses)."""
    p(f"\tLEAQ (BX)({stride}*{AHEAD}), R14 // row t+{AHEAD}")
    p(f"\tLEAQ (R14)({stride}*{rows}), R15")
    p(f"{L}_pf:")
    p("\tPREFETCHT0 (R14)")
    p("\tADDQ $64, R14")
    p("\tCMPQ R14, R15")
    p(f"\tJLT  {L}_pf")


# f16 rows fetch ahead a head at a time instead: the scores' eight-row and
# the mix's four-row loops fetch, with each head, that head's lines of the
# next eight (four) rows, non-temporally, rather than all of those rows'
# lines at the start (192 and 96 prefetches at once, more than the core
# keeps in flight, so the loop waited on them while nothing was computed).
# The fetches then go out beside the work that hides them.
# BenchmarkAttnColdKV, alternating (BENCHMARKS.md): f16/blocks (scattered
# 16-row blocks) 0.72-0.79x the time, f16/rows (adjacent) 0.85-1.0x; in a
# batch-8 step of bench110M the f16 scores' samples fell by about a quarter
# against the tile's. PREFETCHT0 so gave f16/blocks most of that and
# f16/rows nothing; fetching further ahead (scores 16 or 24 rows, mix 8)
# did not win. The other families keep the burst (not measured with this).
SPREAD = ("F16",)


def head_ahead(L, row, stride, three, ahead, shift):
    """PREFETCHNTA the lines of a head (row: its start in row t) in rows
    t+ahead..t+ahead+3 (three: 3·stride), AX walking them, R14 the end;
    R10 holds a float32 head's bytes."""
    src = row
    while ahead:
        k = min(ahead, 8)
        p(f"\tLEAQ ({src})({stride}*{k}), AX")
        src, ahead = "AX", ahead - k
    p("\tMOVQ R10, R14")
    if 2 - shift:
        p(f"\tSHRQ ${2 - shift}, R14             // bytes of a stored head")
    p("\tADDQ AX, R14")
    p(f"{L}:")
    for m in ["(AX)", f"(AX)({stride}*1)", f"(AX)({stride}*2)", f"(AX)({three}*1)"]:
        p(f"\tPREFETCHNTA {m}")
    p("\tADDQ $64, AX")
    p("\tCMPQ AX, R14")
    p(f"\tJLT  {L}")


def spread():
    return CUR in SPREAD


# The family being written (main sets it): FP8's scale registers hold the
# scale times 256.
CUR = None


def scaled(reg, op="VMULPS"):
    """After a scale is loaded into reg: FP8's takes its factor 256."""
    if CUR == "FP8":
        p(f"\t{op}  c256<>(SB), {reg}, {reg}")


def walk_scales(scrow, screl, idx, rows, put):
    """R14 walks the scales of head h in rows t..t+rows-1 (scrow: row t's
    scales; screl: the bytes of a row's; idx: a free register); put(r)
    takes row t+r's."""
    p(f"\tMOVQ {scrow}, R14")
    p(f"\tMOVLQSX (R9)(R13*4), {idx}")
    p(f"\tLEAQ (R14)({idx}*4), R14    // row t's scale of head h")
    for r in range(rows):
        if r:
            p(f"\tADDQ {screl}, R14")
        put(r)


def head_ptr(reg, off, shift):
    """reg = k + (kvh[h+off/4]·d << shift): a head's values in this row."""
    p(f"\tMOVLQSX {off}(R9)(R13*4), {reg}")
    p(f"\tIMULQ   d+48(FP), {reg}")
    if shift:
        p(f"\tSHLQ    ${shift}, {reg}")
    p(f"\tADDQ    BX, {reg}")


def reduce8():
    """Y0..Y7 are the 8-lane accumulators of rows t..t+7 of one head (row r
    in Y{r}); leaves in Y8 the eight sums in row order, each summed in
    HSUM's tree: (l0+l4) and (l2+l6) added, (l1+l5) and (l3+l7) added,
    then those two. Float addition commutes, so each sum has HSUM's bits."""
    # Rows r and 4+r share a register after the first step, a half each.
    for r in range(4):
        p(f"\tVPERM2F128 $0x20, Y{4+r}, Y{r}, Y{8+r}  // rows {r}, {4+r}: low halves")
        p(f"\tVPERM2F128 $0x31, Y{4+r}, Y{r}, Y12")
        p(f"\tVADDPS     Y12, Y{8+r}, Y{8+r}        // l_i + l_(i+4)")
    # Y8: rows 0|4, Y9: 1|5, Y10: 2|6, Y11: 3|7 (4 lanes each per half).
    p("\tVSHUFPS $0x44, Y9, Y8, Y12")
    p("\tVSHUFPS $0xEE, Y9, Y8, Y13")
    p("\tVADDPS  Y13, Y12, Y12          // rows 0,1 | 4,5: (x0+x2), (x1+x3)")
    p("\tVSHUFPS $0x44, Y11, Y10, Y13")
    p("\tVSHUFPS $0xEE, Y11, Y10, Y14")
    p("\tVADDPS  Y14, Y13, Y13          // rows 2,3 | 6,7")
    p("\tVSHUFPS $0x88, Y13, Y12, Y8")
    p("\tVSHUFPS $0xDD, Y13, Y12, Y9")
    p("\tVADDPS  Y9, Y8, Y8             // rows 0,1,2,3 | 4,5,6,7")


def rows8_open(L):
    """The head of scores' eight-row loop: eight rows left, prefetch the
    next eight, then each head of the eight rows."""
    p(f"{L}_rows8:")
    p("\tCMPQ R12, $8")
    p(f"\tJLT  {L}_rows")
    if spread():
        return rows8_heads(L)
    p("\tLEAQ (BX)(CX*8), R14      // rows t+8..t+15")
    p("\tLEAQ (R14)(CX*8), R15")
    p(f"{L}8_pf:")
    p("\tPREFETCHT0 (R14)")
    p("\tADDQ $64, R14")
    p("\tCMPQ R14, R15")
    p(f"\tJLT  {L}8_pf")
    rows8_heads(L)


def rows8_heads(L):
    p("\tMOVQ  DI, R11             // scores of head h, rows t..t+7")
    p("\tXORQ  R13, R13            // h")
    p("\tMOVQ  SI, R8              // query head h")
    p(f"{L}_heads8:")
    p("\tCMPQ R13, heads+40(FP)")
    p(f"\tJGE  {L}_next8")


def rows8_close(L, scales):
    """The tail of scores' eight-row loop: the eight sums reduced, scaled
    and stored, the next head; then the next eight rows (and their scales,
    when scales names the frame's scrow and screl slots)."""
    reduce8()
    p("\tVBROADCASTSS scale+88(FP), Y9")
    p("\tVMULPS  Y9, Y8, Y8")
    p("\tVMOVUPS Y8, (R11)")
    p("\tADDQ sstride+64(FP), R11")
    p("\tINCQ R13                  // R8 walked to query head h+1")
    p(f"\tJMP  {L}_heads8")
    p(f"{L}_next8:")
    p("\tADDQ $32, DI              // rows t+8..")
    p("\tLEAQ (BX)(CX*8), BX")
    if scales:
        scrow, screl = scales
        p(f"\tMOVQ {screl}, R14")
        p("\tSHLQ $3, R14")
        p(f"\tADDQ R14, {scrow}")
    p("\tSUBQ $8, R12")
    p(f"\tJMP  {L}_rows8")


def rows4_open(L, R="Y"):
    """The head of mix's four-row loop: four rows left, prefetch them, then
    each head with its four weights broadcast (Y8-Y11, or Z8-Z11)."""
    p(f"{L}_rows4:")
    p("\tCMPQ R12, $4")
    p(f"\tJLT  {L}_rows")
    if not spread():
        prefetch(L + "4", "DX", 4)
    p("\tXORQ  R13, R13            // h")
    p("\tMOVQ  DI, R11             // out head h")
    p("\tMOVQ  SI, CX              // w[h][t]")
    p(f"{L}_heads4:")
    p("\tCMPQ R13, heads+40(FP)")
    p(f"\tJGE  {L}_next4")
    for r in range(4):
        p(f"\tVBROADCASTSS {4*r}(CX), {R}{8+r}  // w[h][t+{r}]")


def rows4_next(L, scaled_rows):
    """The next four rows of mix (and their scales)."""
    p(f"{L}_next4:")
    p("\tADDQ $16, SI              // row t+4")
    p("\tLEAQ (BX)(DX*4), BX")
    if scaled_rows:
        p("\tMOVQ screl-16(SP), R14")
        p("\tSHLQ $2, R14")
        p("\tADDQ R14, scrow-8(SP)")
    p("\tSUBQ $4, R12")
    p(f"\tJMP  {L}_rows4")


def row_open(L, R="Y"):
    """The head of mix's one-row loop: a row left, then each head with its
    weight broadcast (Y8, or Z8)."""
    p(f"{L}_rows:")
    p("\tTESTQ R12, R12")
    p(f"\tJZ    {L}_done")
    p("\tXORQ  R13, R13            // h")
    p("\tMOVQ  DI, R11             // out head h")
    p("\tMOVQ  SI, CX              // w[h][t]")
    p(f"{L}_heads:")
    p("\tCMPQ R13, heads+40(FP)")
    p(f"\tJGE  {L}_next")
    p(f"\tVBROADCASTSS (CX), {R}8     // w[h][t]")


def row_next(L, scaled_rows):
    """The next row of mix (and its scales)."""
    p(f"{L}_next:")
    p("\tADDQ $4, SI               // row t+1")
    p("\tADDQ DX, BX")
    if scaled_rows:
        p("\tMOVQ screl-16(SP), R14")
        p("\tADDQ R14, scrow-8(SP)")
    p("\tDECQ R12")
    p(f"\tJMP  {L}_rows")


def scores8(L, i8, size, shift, decode):
    """Rows eight at a time, one head at a time: the query head is loaded
    once for eight rows' FMAs, and the eight sums are reduced together
    (reduce8) and stored as one vector. Each score keeps its bits: the same
    8-lane FMA chain over the head, the same HSUM tree, the same scale."""
    p("\tMOVQ kstride+72(FP), CX")
    if shift:
        p(f"\tSHLQ ${shift}, CX              // row stride in bytes")
    p("\tLEAQ (CX)(CX*2), DX       // three rows")
    if i8:
        p("\tMOVQ hkv+80(FP), AX")
        p("\tSHLQ $2, AX")
        p("\tMOVQ AX, screl-56(SP)     // bytes of a row's scales")
    rows = ["(R15)", "(R15)(CX*1)", "(R15)(CX*2)", "(R15)(DX*1)",
            "(AX)", "(AX)(CX*1)", "(AX)(CX*2)", "(AX)(DX*1)"]
    rows8_open(L)
    if i8:
        def put(r):
            p("\tVMOVSS (R14), X10")
            scaled("X10", "VMULSS")
            p(f"\tVMOVSS X10, sc8-{48-4*r}(SP)")
        walk_scales("scrow-16(SP)", "screl-56(SP)", "R15", 8, put)
    head_ptr("R15", 0, shift)
    if spread():
        head_ahead(L + "8_pfa", "R15", "CX", "DX", 8, shift)  # rows t+8..t+11
        head_ahead(L + "8_pfb", "R15", "CX", "DX", 12, shift)  # rows t+12..t+15
    p("\tLEAQ (R15)(CX*4), AX      // row t+4")
    p("\tLEAQ (R8)(R10*1), R14     // the end of query head h")
    for i in range(8):
        p(f"\tVXORPS Y{i}, Y{i}, Y{i}")
    p(f"{L}_cols8:")
    p("\tVMOVUPS     (R8), Y8")
    for r in range(8):
        if i8:
            p(f"\tVBROADCASTSS sc8-{48-4*r}(SP), Y10")
        for st in decode(rows[r], "Y9", "Y10"):
            p("\t" + st)
        p(f"\tVFMADD231PS Y9, Y8, Y{r}")
    p("\tADDQ $32, R8")
    p(f"\tADDQ ${8*size}, R15")
    p(f"\tADDQ ${8*size}, AX")
    p("\tCMPQ R8, R14")
    p(f"\tJLT  {L}_cols8")
    rows8_close(L, ("scrow-16(SP)", "screl-56(SP)") if i8 else None)


def scores(name, elt, size, shift, decode):
    i8 = name in SCALED
    f = f"attnRowsScores{name}AVX2"
    p(f"// func {f}(scores, q *float32, k unsafe.Pointer /* *{elt} */, sc *float32, kvh *int32, heads, d, n, sstride, kstride, hkv int, scale float32)")
    p(f"TEXT ·{f}(SB), NOSPLIT, ${56 if i8 else 8}-92")
    p("\tMOVQ scores+0(FP), DI")
    p("\tMOVQ q+8(FP), SI")
    p("\tMOVQ k+16(FP), BX")
    p("\tMOVQ kvh+32(FP), R9")
    p("\tMOVQ d+48(FP), R10")
    p("\tSHLQ $2, R10              // bytes of a query head")
    p("\tMOVQ n+56(FP), R12")
    if i8:
        p("\tMOVQ sc+24(FP), AX")
        p("\tMOVQ AX, scrow-16(SP)     // the scales of row t")
    L = name.lower() + "s"
    scores8(L, i8, size, shift, decode)
    p(f"{L}_rows:")
    p("\tTESTQ R12, R12")
    p(f"\tJZ    {L}_done")
    p("\tMOVQ kstride+72(FP), R15")
    if shift:
        p(f"\tSHLQ ${shift}, R15")
    p("\tMOVQ R15, CX")
    prefetch(L, "CX")
    p("\tMOVQ  DI, R11             // scores of head h, row t")
    p("\tXORQ  R13, R13            // h")
    p("\tMOVQ  SI, R8              // query head h")
    p(f"{L}_heads:")
    p("\tMOVQ heads+40(FP), R14")
    p("\tSUBQ R13, R14             // heads left")
    p("\tCMPQ R14, $4")
    p(f"\tJLT  {L}_one")
    p("\tLEAQ (R8)(R10*2), CX      // query head h+2")
    p("\tLEAQ (R8)(R10*1), R14")
    p("\tMOVQ R14, end-8(SP)       // the end of query head h")
    ptrs = ["R14", "R15", "DX", "AX"]
    if i8:
        p("\tMOVQ scrow-16(SP), R14")
        for i in range(4):
            p(f"\tMOVLQSX {4*i}(R9)(R13*4), R15")
            p(f"\tVBROADCASTSS (R14)(R15*4), Y{12+i}")
            scaled(f"Y{12+i}")
    for i, r in enumerate(ptrs):
        head_ptr(r, 4 * i, shift)
    for i in range(4):
        p(f"\tVXORPS Y{i}, Y{i}, Y{i}")
    # Four heads, four chains; the query heads are R8, R8+d, CX, CX+d.
    p(f"{L}_cols:")
    for i, m in enumerate(["(R8)", "(R8)(R10*1)", "(CX)", "(CX)(R10*1)"]):
        p(f"\tVMOVUPS     {m}, Y{4+i}")
    steps = [decode(f"({r})", f"Y{8+i}", f"Y{12+i}") for i, r in enumerate(ptrs)]
    for k in range(len(steps[0])):  # each decode stage across the heads
        for s in steps:
            p("\t" + s[k])
    for i in range(4):
        p(f"\tVFMADD231PS Y{8+i}, Y{4+i}, Y{i}")
    p("\tADDQ $32, R8")
    p("\tADDQ $32, CX")
    for r in ptrs:
        p(f"\tADDQ ${8*size}, {r}")
    p("\tCMPQ R8, end-8(SP)")
    p(f"\tJLT  {L}_cols")
    for i in range(4):
        hsum(f"Y{i}", "Y8")
    p("\tLEAQ (CX)(R10*1), R8      // query head h+4 (CX walked head h+2)")
    p("\tADDQ $4, R13")
    p(f"\tJMP  {L}_heads")
    # The last 1-3 heads, one at a time.
    p(f"{L}_one:")
    p("\tTESTQ R14, R14")
    p(f"\tJZ    {L}_next")
    p("\tLEAQ (R8)(R10*1), R14")
    p("\tMOVQ R14, end-8(SP)")
    if i8:
        p("\tMOVQ scrow-16(SP), R14")
        p("\tMOVLQSX (R9)(R13*4), R15")
        p("\tVBROADCASTSS (R14)(R15*4), Y12")
        scaled("Y12")
    head_ptr("R15", 0, shift)
    p("\tVXORPS Y0, Y0, Y0")
    p(f"{L}_one_cols:")
    p("\tVMOVUPS     (R8), Y4")
    for s in decode("(R15)", "Y8", "Y12"):
        p("\t" + s)
    p("\tVFMADD231PS Y8, Y4, Y0")
    p("\tADDQ $32, R8              // ends at query head h+1")
    p(f"\tADDQ ${8*size}, R15")
    p("\tCMPQ R8, end-8(SP)")
    p(f"\tJLT  {L}_one_cols")
    hsum("Y0", "Y8")
    p("\tINCQ R13")
    p(f"\tJMP  {L}_heads")
    p(f"{L}_next:")
    p("\tADDQ $4, DI               // row t+1")
    p("\tMOVQ kstride+72(FP), R14")
    if shift:
        p(f"\tSHLQ ${shift}, R14")
    p("\tADDQ R14, BX")
    if i8:
        p("\tMOVQ hkv+80(FP), R14")
        p("\tSHLQ $2, R14")
        p("\tADDQ R14, scrow-16(SP)")
    p("\tDECQ R12")
    p(f"\tJMP  {L}_rows")
    p(f"{L}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def mix(name, elt, size, shift, decode, avx512=False):
    """Rows four at a time: each out vector is loaded once, takes the four
    rows' FMAs in row order (the bits of one row at a time) and is stored
    once; the last 1-3 rows one at a time. With avx512, 16 columns a
    vector (heads a multiple of 16 wide): an output element's FMAs are its
    own, in the same order, so the width changes no bits."""
    i8 = name in SCALED
    f = f"attnRowsMix{name}{'AVX512' if avx512 else 'AVX2'}"
    R, W = ("Z", 64) if avx512 else ("Y", 32)
    p(f"// func {f}(out, w *float32, v unsafe.Pointer /* *{elt} */, sc *float32, kvh *int32, heads, d, n, wstride, vstride, hkv int)")
    p(f"TEXT ·{f}(SB), NOSPLIT, ${16 if i8 else 0}-88")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ v+16(FP), BX")
    p("\tMOVQ kvh+32(FP), R9")
    p("\tMOVQ d+48(FP), R10")
    p("\tSHLQ $2, R10              // bytes of an out head")
    p("\tMOVQ n+56(FP), R12")
    p("\tMOVQ vstride+72(FP), DX")
    if shift:
        p(f"\tSHLQ ${shift}, DX              // value row stride in bytes")
    p("\tLEAQ (DX)(DX*2), R8       // three rows")
    if i8:
        p("\tMOVQ sc+24(FP), AX")
        p("\tMOVQ AX, scrow-8(SP)      // the scales of row t")
        p("\tMOVQ hkv+80(FP), AX")
        p("\tSHLQ $2, AX")
        p("\tMOVQ AX, screl-16(SP)     // bytes of a row's scales")
    L = name.lower() + ("m512" if avx512 else "m")
    rows = ["(R15)", "(R15)(DX*1)", "(R15)(DX*2)", "(R15)(R8*1)"]
    rows4_open(L, R)
    if i8:
        def put(r):
            p(f"\tVBROADCASTSS (R14), {R}{12+r}")
            scaled(f"{R}{12+r}")
        walk_scales("scrow-8(SP)", "screl-16(SP)", "AX", 4, put)
    head_ptr("R15", 0, shift)
    if spread():
        head_ahead(L + "4_pfh", "R15", "DX", "R8", 4, shift)  # rows t+4..t+7
    p("\tMOVQ R11, AX")
    p("\tLEAQ (R11)(R10*1), R14    // the end of out head h")
    p(f"{L}_cols4:")
    p(f"\tVMOVUPS     (AX), {R}0")
    for r in range(4):
        for s in decode(rows[r], f"{R}{1+r}", f"{R}{12+r}"):
            p("\t" + s)
    for r in range(4):
        p(f"\tVFMADD231PS {R}{1+r}, {R}{8+r}, {R}0")
    p(f"\tVMOVUPS     {R}0, (AX)")
    p(f"\tADDQ ${W}, AX")
    p(f"\tADDQ ${W//4*size}, R15")
    p("\tCMPQ AX, R14")
    p(f"\tJLT  {L}_cols4")
    p("\tMOVQ R14, R11")
    p("\tADDQ wstride+64(FP), CX")
    p("\tINCQ R13")
    p(f"\tJMP  {L}_heads4")
    rows4_next(L, i8)
    # One row at a time.
    row_open(L, R)
    if i8:
        p("\tMOVQ scrow-8(SP), R14")
        p("\tMOVLQSX (R9)(R13*4), R15")
        p(f"\tVBROADCASTSS (R14)(R15*4), {R}9")
        scaled(f"{R}9")
    head_ptr("R15", 0, shift)
    p("\tMOVQ R11, AX")
    p("\tLEAQ (R11)(R10*1), R14    // the end of out head h")
    p(f"{L}_cols:")
    for s in decode("(R15)", f"{R}1", f"{R}9"):
        p("\t" + s)
    p(f"\tVMOVUPS     (AX), {R}0")
    p(f"\tVFMADD231PS {R}1, {R}8, {R}0")
    p(f"\tVMOVUPS     {R}0, (AX)")
    p(f"\tADDQ ${W}, AX")
    p(f"\tADDQ ${W//4*size}, R15")
    p("\tCMPQ AX, R14")
    p(f"\tJLT  {L}_cols")
    p("\tMOVQ R14, R11")
    p("\tADDQ wstride+64(FP), CX")
    p("\tINCQ R13")
    p(f"\tJMP  {L}_heads")
    row_next(L, i8)
    p(f"{L}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


# ---------------------------------------------------------------- int4
#
# The int4 cache's rows (AttnScoresRowsI4): a head's d values are d/2
# bytes of codes, low nibble first, and d/32 scales, one a group of 32.
# Eight values are one dword of codes: VPBROADCASTD puts it in every lane
# and a per-lane shift brings lane i's nibble (bits 4i..4i+3) where the
# decode wants it. AVX2 decodes float32(code-8)·scale: the nibble shifted
# to the top, its bit 3 flipped, shifted back arithmetically (code-8),
# converted and multiplied. AVX-512 shifts it to the bottom and looks it
# up in the 16 levels times the scale (VPERMI2PS, tables made once a group
# of 32): the same product, rounded once, so both give DequantizeLUT4's
# values and the bits of AttnScores and AttnMixAdd on them. Heads are whole
# groups, at most 8 (the wrapper sends the rest to Go): a block's rows'
# scales of a head are copied to the frame (VMASKMOVPS, ng of 8 lanes),
# where one register walks them a group at a time.
#
# Arguments as the other families', kstride (vstride) in bytes and hkv the
# scales of a row (KV heads · d/32).

# The constant registers of the function being written: the per-lane
# shift, then AVX2's sign bit or AVX-512's two halves of the levels.
I4C = None


def i4_consts(avx512):
    shift, c1, c2 = I4C
    p(f"\tVMOVDQU i4{'shr' if avx512 else 'shl'}<>(SB), {shift}")
    if avx512:
        p(f"\tVMOVUPS i4lev<>(SB), {c1}")
        p(f"\tVMOVUPS i4lev<>+32(SB), {c2}")
    else:
        p(f"\tVMOVDQU i4sign<>(SB), {c1}")


def i4_mask(reg):
    """reg = VMASKMOVPS's mask of a head's ng = d/32 scales (uses R14, R15)."""
    p("\tMOVQ d+48(FP), R15")
    p("\tSHRQ $3, R15              // ng·4, the bytes of a head's scales")
    p("\tLEAQ i4mask<>+32(SB), R14")
    p("\tSUBQ R15, R14")
    p(f"\tVMOVDQU (R14), {reg}")


def i4_head(g, scp):
    """g = kvh[h]·d/2 + BX: KV head kvh[h]'s codes in row t; scp its scales
    in row t."""
    p(f"\tMOVLQSX (R9)(R13*4), {g}")
    p(f"\tMOVQ {g}, {scp}")
    p(f"\tIMULQ d+48(FP), {scp}")
    p(f"\tSHRQ $3, {scp}              // g·ng·4")
    p(f"\tADDQ scrow-8(SP), {scp}")
    p(f"\tIMULQ d+48(FP), {g}")
    p(f"\tSHRQ $1, {g}                // g·d/2")
    p(f"\tADDQ BX, {g}")


def i4_scale(avx512, mem, tmp, lo, hi):
    """A group's scale at mem: AVX2 broadcasts it into tmp; AVX-512 makes
    the tables lo, hi, the levels times it."""
    p(f"\tVBROADCASTSS {mem}, {tmp}")
    if avx512:
        p(f"\tVMULPS       {I4C[1]}, {tmp}, {lo}")
        p(f"\tVMULPS       {I4C[2]}, {tmp}, {hi}")


def i4_decode(avx512, src, dst, sc, lo, hi):
    """8 values of the codes dword src into dst (AVX2: times the scale in
    sc; AVX-512: looked up in the tables lo, hi)."""
    shift, c1, _ = I4C
    p(f"\tVPBROADCASTD {src}, {dst}")
    if avx512:
        p(f"\tVPSRLVD      {shift}, {dst}, {dst}")
        p(f"\tVPERMI2PS    {hi}, {lo}, {dst}")
        return
    p(f"\tVPSLLVD      {shift}, {dst}, {dst}")
    p(f"\tVPXOR        {c1}, {dst}, {dst}")
    p(f"\tVPSRAD       $28, {dst}, {dst}")
    p(f"\tVCVTDQ2PS    {dst}, {dst}")
    p(f"\tVMULPS       {sc}, {dst}, {dst}")


def i4_copy(mask, tmp, buf, rows):
    """The scales of head h in rows t..t+rows-1 (AX: row t's) to the frame
    at buf, a row's 32 bytes apart; R14 = buf after."""
    p(f"\tLEAQ {buf}(SP), R14")
    for r in range(rows):
        if r:
            p("\tADDQ screl-16(SP), AX")
        p(f"\tVMASKMOVPS (AX), {mask}, {tmp}")
        p(f"\tVMOVUPS    {tmp}, {32*r}(R14)   // row t+{r}'s")


def i4_prologue(f, args, frame):
    p(f"// func {f}({args})")
    p(f"TEXT ·{f}(SB), NOSPLIT, ${frame}-{92 if 'Scores' in f else 88}")
    p("\tMOVQ kvh+32(FP), R9")
    p("\tMOVQ d+48(FP), R10")
    p("\tSHLQ $2, R10              // bytes of a head's floats")
    p("\tMOVQ n+56(FP), R12")
    p("\tMOVQ sc+24(FP), AX")
    p("\tMOVQ AX, scrow-8(SP)      // the scales of row t")
    p("\tMOVQ hkv+80(FP), AX")
    p("\tSHLQ $2, AX")
    p("\tMOVQ AX, screl-16(SP)     // bytes of a row's scales")


def scores_i4(avx512):
    """scores8's order: eight rows a head at a time, each row's chain and
    sum as one row's (Y0-Y7 the rows' accumulators, Y8 the query); the
    last 1-7 rows one at a time."""
    global I4C
    isa = "AVX512" if avx512 else "AVX2"
    L = "i4s" + ("z" if avx512 else "y")
    I4C = ("Y11", "Y12", "Y13") if avx512 else ("Y11", "Y12", None)
    mask, tmp = ("Y14", "Y15") if avx512 else ("Y13", "Y14")
    i4_prologue(f"attnRowsScoresI4{isa}", "scores, q *float32, k unsafe.Pointer /* *byte */, sc *float32, kvh *int32, heads, d, n, sstride, kstride, hkv int, scale float32", 288)
    p("\tMOVQ scores+0(FP), DI")
    p("\tMOVQ q+8(FP), SI")
    p("\tMOVQ k+16(FP), BX")
    p("\tMOVQ kstride+72(FP), CX   // bytes of a row's codes")
    p("\tLEAQ (CX)(CX*2), DX       // three rows")
    rows = ["(R15)", "(R15)(CX*1)", "(R15)(CX*2)", "(R15)(DX*1)",
            "(AX)", "(AX)(CX*1)", "(AX)(CX*2)", "(AX)(DX*1)"]
    rows8_open(L)
    i4_consts(avx512)  # reduce8 took their registers
    i4_mask(mask)
    p("\tLEAQ (R8)(R10*1), R14")
    p("\tMOVQ R14, end-24(SP)      // the end of query head h")
    i4_head("R15", "AX")
    i4_copy(mask, tmp, "buf-288", 8)
    p("\tLEAQ (R15)(CX*4), AX      // row t+4")
    for i in range(8):
        p(f"\tVXORPS Y{i}, Y{i}, Y{i}")
    p(f"{L}_grp8:")
    if avx512:
        for r in range(8):
            i4_scale(True, f"{32*r}(R14)", "Y10", f"Y{16+2*r}", f"Y{17+2*r}")
    for c in range(4):
        p(f"\tVMOVUPS     {32*c}(R8), Y8")
        for r in range(8):
            if not avx512:
                i4_scale(False, f"{32*r}(R14)", "Y10", None, None)
            i4_decode(avx512, f"{4*c}{rows[r]}", "Y9", "Y10", f"Y{16+2*r}", f"Y{17+2*r}")
            p(f"\tVFMADD231PS Y9, Y8, Y{r}")
    p("\tADDQ $128, R8")
    p("\tADDQ $16, R15")
    p("\tADDQ $16, AX")
    p("\tADDQ $4, R14")
    p("\tCMPQ R8, end-24(SP)")
    p(f"\tJLT  {L}_grp8")
    rows8_close(L, ("scrow-8(SP)", "screl-16(SP)"))
    p(f"{L}_rows:")
    p("\tTESTQ R12, R12")
    p(f"\tJZ    {L}_done")
    i4_consts(avx512)
    p("\tMOVQ  DI, R11             // scores of head h, row t")
    p("\tXORQ  R13, R13            // h")
    p("\tMOVQ  SI, R8              // query head h")
    p(f"{L}_heads:")
    p("\tCMPQ R13, heads+40(FP)")
    p(f"\tJGE  {L}_next")
    i4_head("R15", "AX")
    p("\tLEAQ (R8)(R10*1), R14     // the end of query head h")
    p("\tVXORPS Y0, Y0, Y0")
    p(f"{L}_grp:")
    i4_scale(avx512, "(AX)", "Y10", "Y16", "Y17")
    for c in range(4):
        i4_decode(avx512, f"{4*c}(R15)", "Y9", "Y10", "Y16", "Y17")
        p(f"\tVFMADD231PS {32*c}(R8), Y9, Y0")
    p("\tADDQ $128, R8             // ends at query head h+1")
    p("\tADDQ $16, R15")
    p("\tADDQ $4, AX")
    p("\tCMPQ R8, R14")
    p(f"\tJLT  {L}_grp")
    hsum("Y0", "Y8")
    p("\tINCQ R13")
    p(f"\tJMP  {L}_heads")
    p(f"{L}_next:")
    p("\tADDQ $4, DI               // row t+1")
    p("\tADDQ CX, BX")
    p("\tMOVQ screl-16(SP), R14")
    p("\tADDQ R14, scrow-8(SP)")
    p("\tDECQ R12")
    p(f"\tJMP  {L}_rows")
    p(f"{L}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def mix_i4(avx512):
    """mix's order: four rows a head at a time, each out vector loaded
    once, taking the rows' FMAs in row order, stored once (Y0 the out
    vector, Y1-Y4 the rows' values, Y8-Y11 their weights); the last 1-3
    rows one at a time."""
    global I4C
    isa = "AVX512" if avx512 else "AVX2"
    L = "i4m" + ("z" if avx512 else "y")
    I4C = ("Y5", "Y6", "Y7") if avx512 else ("Y5", "Y6", None)
    mask, tmp = ("Y12", "Y13") if avx512 else ("Y7", "Y12")
    i4_prologue(f"attnRowsMixI4{isa}", "out, w *float32, v unsafe.Pointer /* *byte */, sc *float32, kvh *int32, heads, d, n, wstride, vstride, hkv int", 144)
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ v+16(FP), BX")
    p("\tMOVQ vstride+72(FP), DX   // bytes of a row's codes")
    p("\tLEAQ (DX)(DX*2), R8       // three rows")
    i4_consts(avx512)
    i4_mask(mask)
    rows = ["(R15)", "(R15)(DX*1)", "(R15)(DX*2)", "(R15)(R8*1)"]
    rows4_open(L)
    i4_head("R15", "AX")
    i4_copy(mask, tmp, "buf-144", 4)
    p("\tMOVQ R11, AX")
    p("\tADDQ R10, R11             // the end of out head h")
    p(f"{L}_grp4:")
    for r in range(4):
        i4_scale(avx512, f"{32*r}(R14)", "Y14" if avx512 else f"Y{12+r}", f"Y{16+2*r}", f"Y{17+2*r}")
    for c in range(4):
        p(f"\tVMOVUPS     {32*c}(AX), Y0")
        for r in range(4):
            i4_decode(avx512, f"{4*c}{rows[r]}", f"Y{1+r}", f"Y{12+r}", f"Y{16+2*r}", f"Y{17+2*r}")
        for r in range(4):
            p(f"\tVFMADD231PS Y{1+r}, Y{8+r}, Y0")
        p(f"\tVMOVUPS     Y0, {32*c}(AX)")
    p("\tADDQ $128, AX")
    p("\tADDQ $16, R15")
    p("\tADDQ $4, R14")
    p("\tCMPQ AX, R11")
    p(f"\tJLT  {L}_grp4")
    p("\tADDQ wstride+64(FP), CX")
    p("\tINCQ R13")
    p(f"\tJMP  {L}_heads4")
    rows4_next(L, True)
    row_open(L)
    i4_head("R15", "R14")
    p("\tMOVQ R11, AX")
    p("\tADDQ R10, R11             // the end of out head h")
    p(f"{L}_grp:")
    i4_scale(avx512, "(R14)", "Y14" if avx512 else "Y12", "Y16", "Y17")
    for c in range(4):
        i4_decode(avx512, f"{4*c}(R15)", "Y1", "Y12", "Y16", "Y17")
        p(f"\tVMOVUPS     {32*c}(AX), Y0")
        p("\tVFMADD231PS Y1, Y8, Y0")
        p(f"\tVMOVUPS     Y0, {32*c}(AX)")
    p("\tADDQ $128, AX")
    p("\tADDQ $16, R15")
    p("\tADDQ $4, R14")
    p("\tCMPQ AX, R11")
    p(f"\tJLT  {L}_grp")
    p("\tADDQ wstride+64(FP), CX")
    p("\tINCQ R13")
    p(f"\tJMP  {L}_heads")
    row_next(L, True)
    p(f"{L}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def i4_data():
    """The int4 decode's constants (see above)."""
    import struct
    def dwords(name, vals):
        for i in range(0, len(vals), 2):
            p(f"DATA {name}<>+{4*i}(SB)/8, $0x{vals[i+1]:08x}{vals[i]:08x}")
        p(f"GLOBL {name}<>(SB), RODATA|NOPTR, ${4*len(vals)}")
    p("// int4: the per-lane shifts of a codes dword (AVX2 to the top, AVX-512")
    p("// to the bottom), the sign bit, the levels (kernels.Int4Levels) and")
    p("// eight lanes set then eight clear, VMASKMOVPS's masks.")
    dwords("i4shl", [28 - 4 * i for i in range(8)])
    dwords("i4shr", [4 * i for i in range(8)])
    dwords("i4sign", [0x80000000] * 8)
    dwords("i4lev", [struct.unpack("<I", struct.pack("<f", v))[0] for v in range(-8, 8)])
    dwords("i4mask", [0xffffffff] * 8 + [0] * 8)
    p()


def main():
    header("attnrows_gen.py", "attnrows_amd64.s")
    p("// Attention over a float32, f16, int8, fp8 or int4 KV cache, every head of a")
    p("// row at a time; attnrows_gen.py says why and how the bits are kept.")
    p()
    p("// FP8: the mask of a sign-extended E4M3 code shifted left 7 (a half),")
    p("// and the factor between that half and the code's value.")
    for i in range(2):
        p(f"DATA fp8mask<>+{8*i}(SB)/8, $0xbf80bf80bf80bf80")
    p("GLOBL fp8mask<>(SB), RODATA|NOPTR, $16")
    for i in range(4):
        p(f"DATA c256<>+{8*i}(SB)/8, $0x4380000043800000")
    p("GLOBL c256<>(SB), RODATA|NOPTR, $32")
    p()
    i4_data()
    global CUR
    for t in TYPES:
        CUR = t[0]
        scores(*t)
        mix(*t)
        if t[0] in WIDE_MIX:
            mix(*t, avx512=True)
    for avx512 in (False, True):
        scores_i4(avx512)
        mix_i4(avx512)
    print("\n".join(out).rstrip("\n"))


if __name__ == "__main__":
    main()
