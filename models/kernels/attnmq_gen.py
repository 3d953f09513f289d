#!/usr/bin/env python3
"""Writes attnmq_amd64.s: the AVX-512 attention kernels of a group of up to
16 queries over float32 rows (attnmq.go says why).

    python3 attnmq_gen.py > attnmq_amd64.s

Scores, queries in the lanes: qt holds the group's query heads transposed
(element j of head h of query r at qt[(h·d+j)·16+r]). For two key rows at
a time, eight accumulators each: P_l = fma(qt[8c+l], broadcast k[8c+l],
P_l) over c < d/8, so each lane runs the eight FMA chains of the row
kernels' 8-lane accumulator; then ((P0+P4)+(P2+P6)) + ((P1+P5)+(P3+P7)),
their HSUM tree, times scale: 16 queries' scores of one row, each with
the bits it gets alone. Eight rows (four passes) are transposed in
registers to 8 rows of each query and stored with that query's causal
mask (a byte per query and block of 8 rows, from the caller), which also
keeps out rows past n (their reads are of the last row instead). Head by
head, so that a head's qt (4 KB for d = 64) stays in L1 over the rows.

Mix: one head's columns, C zmm (C = 1..4), for up to 24/C queries: each
value row is loaded once and FMAed into every query's accumulators (out,
loaded once and stored once), its weight broadcast from memory. Rows a..b-1
(every query of the block sees them) take no checks; the others are
applied to a query only within its from..to. Each output element takes its
rows' FMAs in row order: the bits of AttnMixRowsF32.

    mqScoresAVX512(scores, qt, k *float32, kvh *int32, masks *uint8, heads, d, n, sstride, qsstride, kstride int, scale float32)
    mqMix{C}AVX512(out, w, v *float32, from, to *int32, nq, n, a, b, ostride, wqstride, vstride int)

Strides in bytes. Query r's score of head h for row t goes to
scores + r·qsstride + h·sstride + 4t; its weight is read likewise from w,
and its output columns are out + r·ostride.
"""
from asmgen import out, p, header


def slot(b, idx, idx3, i):
    """The address of query 4k+i (i < 4) from b, query 4k's: b + i·idx
    bytes, idx3 = 3·idx."""
    return [f"({b})", f"({b})({idx}*1)", f"({b})({idx}*2)", f"({b})({idx3}*1)"][i]


def at(base, idx, idx3, tmp, r, first):
    """The address of query r's (r < 16) slot: base + r·idx bytes, idx3 =
    3·idx. Queries 4k..4k+3 are addressed from tmp = base + 4k·idx, which
    this sets when r starts a new four (first: tmp not yet set)."""
    k, i = divmod(r, 4)
    b = base if k == 0 else tmp
    if k and i == 0:
        p(f"\tLEAQ ({base if first else tmp})({idx}*4), {tmp}")
    return slot(b, idx, idx3, i)


# Scores: accumulators Z0-Z15 (row A: Z0-Z7, row B: Z8-Z15, lane partial l
# in Z{l} and Z{8+l}), a qt vector Z16, the eight rows' scores Z17-Z24,
# the transpose's qword indices Z25-Z26 and the scale Z27.
R = 17


def reduce(acc, dst):
    """The HSUM tree over the eight partials acc..acc+7, times scale."""
    a = [f"Z{acc + i}" for i in range(8)]
    p(f"\tVADDPS {a[4]}, {a[0]}, {a[0]}")
    p(f"\tVADDPS {a[6]}, {a[2]}, {a[2]}")
    p(f"\tVADDPS {a[5]}, {a[1]}, {a[1]}")
    p(f"\tVADDPS {a[7]}, {a[3]}, {a[3]}")
    p(f"\tVADDPS {a[2]}, {a[0]}, {a[0]}")
    p(f"\tVADDPS {a[3]}, {a[1]}, {a[1]}")
    p(f"\tVADDPS {a[1]}, {a[0]}, {a[0]}")
    p(f"\tVMULPS Z27, {a[0]}, {dst}")


def store8():
    """Z17-Z24 hold rows 0-7 of a block (lane r: query r); stores each
    query's 8 scores under its mask. Unpacking pairs of floats, then of
    qwords, leaves each 128-bit lane j holding 4 rows of query 4j+m; a
    two-table qword permute joins a query's two halves."""
    for i in range(4):
        a, b = f"Z{R + 2*i}", f"Z{R + 2*i + 1}"
        p(f"\tVUNPCKLPS {b}, {a}, Z{2*i}")
        p(f"\tVUNPCKHPS {b}, {a}, Z{2*i + 1}")
    # Z8+m: rows 0-3 of queries m, 4+m, 8+m, 12+m (a lane each); Z12+m:
    # rows 4-7.
    for h in range(2):
        for i in range(2):
            x, y = f"Z{4*h + i}", f"Z{4*h + i + 2}"
            p(f"\tVUNPCKLPD {y}, {x}, Z{8 + 4*h + 2*i}")
            p(f"\tVUNPCKHPD {y}, {x}, Z{8 + 4*h + 2*i + 1}")
    for m in range(4):
        p(f"\tVMOVAPS    Z{8+m}, Z{4+m}")
        p(f"\tVPERMT2PD  Z{12+m}, Z26, Z{4+m}   // queries {8+m}, {12+m}")
        p(f"\tVPERMT2PD  Z{12+m}, Z25, Z{8+m}   // queries {m}, {4+m}")
        p(f"\tVEXTRACTF32X8 $1, Z{8+m}, Y{m}")
        p(f"\tVEXTRACTF32X8 $1, Z{4+m}, Y{12+m}")
    # A masked store whose mask is zero still costs as much as a page walk
    # on AMD when its address is outside the buffer (queries past nq made
    # a two-query group 30 times slower): no store then.
    for r in range(16):
        k, m = divmod(r, 4)
        y = [8, 0, 4, 12][k] + m
        addr = at('DI', 'R10', 'R11', 'R12', r, k == 1)
        p(f"\tKMOVB {r}(R9), K1")
        p("\tKORTESTB K1, K1")
        p(f"\tJZ   stored{r}")
        p(f"\tVMOVUPS Y{y}, K1, {addr}")
        p(f"stored{r}:")


def scores():
    p("// func mqScoresAVX512(scores, qt, k *float32, kvh *int32, masks *uint8, heads, d, n, sstride, qsstride, kstride int, scale float32)")
    p("TEXT ·mqScoresAVX512(SB), NOSPLIT, $16-92")
    p("\tMOVQ d+48(FP), AX")
    p("\tSHLQ $2, AX")
    p("\tMOVQ AX, dbytes-16(SP)    // bytes of a head")
    p("\tMOVQ kstride+80(FP), CX")
    p("\tMOVQ qsstride+72(FP), R10")
    p("\tLEAQ (R10)(R10*2), R11")
    p("\tVBROADCASTSS scale+88(FP), Z27")
    p("\tVMOVUPS mqlo<>(SB), Z25")
    p("\tVMOVUPS mqhi<>(SB), Z26")
    p("\tXORQ R13, R13             // h")
    p("heads:")
    p("\tCMPQ R13, heads+40(FP)")
    p("\tJGE  done")
    p("\tMOVQ R13, SI")
    p("\tIMULQ dbytes-16(SP), SI")
    p("\tSHLQ $4, SI")
    p("\tADDQ qt+8(FP), SI         // qt of head h")
    p("\tMOVQ kvh+24(FP), AX")
    p("\tMOVLQSX (AX)(R13*4), R8")
    p("\tIMULQ dbytes-16(SP), R8")
    p("\tADDQ k+16(FP), R8         // row 0's KV head kvh[h]")
    p("\tMOVQ n+56(FP), AX")
    p("\tDECQ AX")
    p("\tIMULQ CX, AX")
    p("\tADDQ R8, AX")
    p("\tMOVQ AX, last-8(SP)       // row n-1's")
    p("\tMOVQ R13, DI")
    p("\tIMULQ sstride+64(FP), DI")
    p("\tADDQ scores+0(FP), DI     // query 0's scores of head h, row 0")
    p("\tMOVQ masks+32(FP), R9")
    p("\tMOVQ n+56(FP), R14        // rows left")
    p("block:")
    for ps in range(4):
        p(f"\t// rows {2*ps}, {2*ps+1} of the block (past n: row n-1)")
        p("\tMOVQ R8, BX")
        p("\tCMPQ BX, last-8(SP)")
        p("\tCMOVQGT last-8(SP), BX")
        p("\tLEAQ (R8)(CX*1), R15")
        p("\tCMPQ R15, last-8(SP)")
        p("\tCMOVQGT last-8(SP), R15")
        for i in range(16):
            p(f"\tVXORPS Z{i}, Z{i}, Z{i}")
        p("\tXORQ AX, AX")
        p("\tMOVQ SI, DX")
        p(f"cols{ps}:")
        for l in range(8):
            p(f"\tVMOVUPS {64*l}(DX), Z16")
            p(f"\tVFMADD231PS.BCST {4*l}(BX)(AX*1), Z16, Z{l}")
            p(f"\tVFMADD231PS.BCST {4*l}(R15)(AX*1), Z16, Z{8+l}")
        p("\tADDQ $512, DX")
        p("\tADDQ $32, AX")
        p("\tCMPQ AX, dbytes-16(SP)")
        p(f"\tJLT  cols{ps}")
        reduce(0, f"Z{R + 2*ps}")
        reduce(8, f"Z{R + 2*ps + 1}")
        p("\tLEAQ (R8)(CX*2), R8")
    store8()
    p("\tADDQ $32, DI              // rows 8.. of the next block")
    p("\tADDQ $16, R9")
    p("\tSUBQ $8, R14")
    p("\tJGT  block")
    p("\tINCQ R13")
    p("\tJMP  heads")
    p("done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def mix(C):
    Q = min(16, 24 // C)
    name = f"mqMix{C}AVX512"
    L = f"m{C}"
    p(f"// func {name}(out, w, v *float32, from, to *int32, nq, n, a, b, ostride, wqstride, vstride int)")
    p(f"// {16*C} columns of one head for up to {Q} queries; query r's columns i")
    p(f"// in Z{{r·{C}+i}}, the value row in Z24-Z{23+C}.")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-96")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ v+16(FP), BX")
    p("\tMOVQ from+24(FP), R8")
    p("\tMOVQ to+32(FP), R9")
    p("\tMOVQ vstride+88(FP), DX")
    p("\tMOVQ wqstride+80(FP), R11")
    p("\tLEAQ (R11)(R11*2), R12")

    def outs(op):
        """Loads (or stores) the nq queries' accumulators."""
        p("\tMOVQ ostride+72(FP), R10")
        p("\tMOVQ DI, AX")
        for r in range(Q):
            if r:
                p(f"\tCMPQ nq+40(FP), ${r}")
                p(f"\tJLE  {L}_{op}ed")
                p("\tADDQ R10, AX")
            for i in range(C):
                if op == "load":
                    p(f"\tVMOVUPS {64*i}(AX), Z{r*C + i}")
                else:
                    p(f"\tVMOVUPS Z{r*C + i}, {64*i}(AX)")
        p(f"{L}_{op}ed:")

    def row(checked):
        """Row t (CX) into the queries' accumulators."""
        end = f"{L}_{'c' if checked else 'f'}end"
        for i in range(C):
            p(f"\tVMOVUPS {64*i}(BX), Z{24 + i}")
        for k in range(1, (Q + 3) // 4):
            p(f"\tLEAQ ({'SI' if k == 1 else f'R{12 + k - 1}'})(R11*4), R{12 + k}  // query {4*k}'s weights")
        for r in range(Q):
            skip = f"{L}_{'c' if checked else 'f'}{r}"
            if r:
                p(f"\tCMPQ R10, ${r}")
                p(f"\tJLE  {end}")
            if checked:
                p(f"\tCMPL CX, {4*r}(R8)")
                p(f"\tJLT  {skip}")
                p(f"\tCMPL CX, {4*r}(R9)")
                p(f"\tJGE  {skip}")
            k, i = divmod(r, 4)
            b = "SI" if k == 0 else f"R{12 + k}"
            w = slot(b, "R11", "R12", i)
            for c in range(C):
                p(f"\tVFMADD231PS.BCST {w}, Z{24 + c}, Z{r*C + c}")
            if checked:
                p(f"{skip}:")
        p(f"{end}:")
        p("\tADDQ $4, SI")
        p("\tADDQ DX, BX")
        p("\tINCQ CX")

    outs("load")
    p("\tMOVQ nq+40(FP), R10")
    p("\tXORQ CX, CX               // t")
    p("\tMOVQ a+56(FP), AX         // rows 0..a-1 checked, then a..b-1 not, then b..n-1")
    p(f"{L}_checked:")
    p("\tCMPQ CX, AX")
    p(f"\tJGE  {L}_phase")
    row(True)
    p(f"\tJMP  {L}_checked")
    p(f"{L}_phase:")
    p("\tCMPQ CX, n+48(FP)")
    p(f"\tJGE  {L}_done")
    p("\tMOVQ n+48(FP), AX")
    p(f"{L}_fast:")
    p("\tCMPQ CX, b+64(FP)")
    p(f"\tJGE  {L}_checked")
    row(False)
    p(f"\tJMP  {L}_fast")
    p(f"{L}_done:")
    outs("stor")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def main():
    header("attnmq_gen.py", "attnmq_amd64.s")
    p("// The qword permutes of the scores' transpose: a query's rows 0-3 and")
    p("// 4-7 side by side, queries m and 4+m (mqlo) or 8+m and 12+m (mqhi).")
    for i, (a, b) in enumerate([(0, 1), (8, 9), (2, 3), (10, 11)]):
        p(f"DATA mqlo<>+{16*i}(SB)/8, ${a}")
        p(f"DATA mqlo<>+{16*i+8}(SB)/8, ${b}")
    p("GLOBL mqlo<>(SB), RODATA|NOPTR, $64")
    for i, (a, b) in enumerate([(4, 5), (12, 13), (6, 7), (14, 15)]):
        p(f"DATA mqhi<>+{16*i}(SB)/8, ${a}")
        p(f"DATA mqhi<>+{16*i+8}(SB)/8, ${b}")
    p("GLOBL mqhi<>(SB), RODATA|NOPTR, $64")
    p()
    scores()
    for C in range(1, 5):
        mix(C)
    print("\n".join(out).rstrip("\n"))


if __name__ == "__main__":
    main()
