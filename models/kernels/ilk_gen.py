# Generates ilk_amd64.s: python3 ilk_gen.py > ilk_amd64.s.
#
# AVX-512 VNNI tiles of the interleaved Q4_K, Q5_K, Q6_K, IQ4_XS, Q2_K and
# Q3_K products (ilk.go): one row group (16 rows in the lanes of a zmm) × T =
# 1..8 tokens of the packed activation (ilkFormats' act bytes per 8 tokens
# and super-block: values at 256t, xd at 2048+4t, Q4_K's and Q5_K's
# sub-block pair sums at 2080+16t, Q6_K's -32·sums at 2080+64t, IQ4_XS's
# -128·sums at 2080+32t).
#
# Per super-block and sub-block s: each quad of 64 bytes (4 nibbles of 16
# rows) is masked (low nibbles, s even) or shifted and masked (high, s odd)
# once for the T tokens' VPDPBUSD, each broadcasting the token's 4 values;
# the sub-block's exact int32 sum per (row, token) is then multiplied by the
# 16 rows' 6-bit scales (VPMULLD) into the token's isum. The mins go in
# through VPDPWSSD of (m_2i, m_2i+1) words by the token's pair sums, and
# the float steps are dotQ4KGo's, lane by lane, with the float accumulators
# (scale and min, 16 rows × T) in facc. Few tokens split each sub-block's
# VPDPBUSD chain in 2 or 4 (exact integer sums in any order) so that its
# latency does not serialize a decode step. Q5_K (il5k) is Q4_K with the
# fifth bit of each value (sub-block s: bit s of the qh quad) ORed in at bit
# 4 of the nibble.
#
# Q6_K (il6k): each vector of 4 values of 16 rows is put together from a
# quad of ql (low or high nibbles) and one of qh (2 bits moved to bits 4-5);
# each sub-block of 16 values starts at the token's -32·sum of it, and its
# sum times the rows' int8 scales (VPMULLD) goes into isum; one float step
# per super-block, no mins.
#
# IQ4_XS (il4xs): each quad of 64 bytes gives two vectors of 4 values of
# 16 rows (low and high nibbles), looked up as level+128 (VPSHUFB; u8 for
# VPDPBUSD); each sub-block of 32 starts at the token's -128·sum of it, so
# its sum is Σ level·x exactly, and times the rows' ls-32 (decoded from
# scales_l and scales_h, VPMULLD) goes into isum; one float step per
# super-block. At the extremes (levels -127 or 113, activations ±127, |ls-32|
# <= 32) the lane sums stay under 2^21 and isum under 2^28.
#
# Registers: Z0-Z7 the tokens' isum, Z8-Z15 the VPDPBUSD chains (then the
# msums), Z16-Z19 float temporaries, Z22-Z24 scales and mins, Z25 Z26
# weights, Z27 dmin, Z28 d, Z29 dword 15, Z30 dword 63, Z31 bytes 0x0f
# (Q5_K: Z19 Z20 the fifth bits, Z21 bytes 0x10; Q6_K: Z22 the scales, Z23 Z24 the high bits, Z30 bytes 0x30; IQ4_XS:
# Z20 scales_h, Z21 dword 32, Z23 Z24 the scales, Z27 dword 48, Z30 the
# levels).
import sys

from asmgen import out, p, header

BLOCK6, ACT6 = 3360, 2624
ARGS = "out *float32, w *byte, nb int, xa *byte, ldo int, facc *float32"
BLOCK, ACT = 2304, 2240
BLOCK5 = 2816
BLOCKXS, ACTXS = 2176, 2368
BLOCK2, ACT2 = 1344, 2368
BLOCK3, ACT3 = 1760, 2624
# PF: how many super-blocks ahead the weights are prefetched (about the
# 17 KiB ahead ilblock_gen.py found best for its tiles). The super-block's
# 21-53 prefetches are spread over its sub-blocks: all at the top of the
# loop, more than the misses the core keeps in flight, some were dropped,
# and a one-token tile streamed Q6_K from memory at 14-21 GB/s, Q5_K at
# 17-23 (spread: 25-32 and 21-38; BenchmarkILKMemory, BENCHMARKS.md).
PF = 8


def const(v, z):
    p(f"\tMOVL         ${v}, AX")
    p("\tVMOVD        AX, X16")
    p(f"\tVPBROADCASTD X16, {z}")


def scale(j, z, tmp, mins=False):
    """Sub-block j's 6-bit scale (or min) of the 16 rows into z as dwords,
    as get_scale_min_k4 (qblock.go's unpackK4)."""
    if j < 4:
        p(f"\tVPMOVZXBD {64+16*(j+4 if mins else j)}(SI), {z}")
        p(f"\tVPANDD    Z30, {z}, {z}")
        return
    p(f"\tVPMOVZXBD {64+16*(j+4)}(SI), {z}")
    if mins:
        p(f"\tVPSRLD    $4, {z}, {z}")
    else:
        p(f"\tVPANDD    Z29, {z}, {z}")
    p(f"\tVPMOVZXBD {64+16*(j if mins else j-4)}(SI), {tmp}")
    p(f"\tVPSRLD    $6, {tmp}, {tmp}")
    p(f"\tVPSLLD    $4, {tmp}, {tmp}")
    p(f"\tVPORD     {tmp}, {z}, {z}")


def begin(name):
    """The frame of a tile: its arguments in SI (w), CX (nb), BX (xa), DI
    (facc)."""
    p(f"// func {name}({ARGS})")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-48")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ nb+16(FP), CX")
    p("\tMOVQ xa+24(FP), BX")
    p("\tMOVQ facc+40(FP), DI")


# The lines of the super-block PF ahead not yet prefetched this iteration,
# and how many of them each fold asks for (loop_head sets both).
pending = []
per = 0


def prefetch(n):
    """Prefetch the next n pending lines: a super-block's 21-53 lines are
    spread over its sub-blocks (fold calls this) rather than asked for at
    once."""
    for off in pending[:n]:
        p(f"\tPREFETCHT0 {off}(SI)")
    del pending[:n]


def loop_head(name, T, block, slots, folds):
    """Zero the T tokens' float accumulators (slots of 64 bytes each at
    64·slots·t), skip an empty product, open the loop over super-blocks
    (its prefetches of the super-block PF ahead spread over the folds of
    its sub-blocks) and load the 16 rows' d into Z28."""
    p("\tVPXORD Z16, Z16, Z16")
    for t in range(T):
        for s in range(slots):
            p(f"\tVMOVUPS Z16, {64*slots*t+64*s}(DI)")
    p("\tTESTQ CX, CX")
    p(f"\tJZ    {name}_store")
    p(f"{name}_loop:")
    global per
    pending[:] = [PF * block + off for off in range(0, block, 64)]
    per = -(-len(pending) // folds)
    p("\tVCVTPH2PS (SI), Z28")


def float_step(T):
    """acc += float32(isum)·float32(d·xd) for each token (isum in Z0..)."""
    for t in range(T):
        p(f"\tVMULPS.BCST {2048+4*t}(BX), Z28, Z16")
        p(f"\tVCVTDQ2PS   Z{t}, Z17")
        p("\tVMULPS      Z16, Z17, Z17")
        p(f"\tVADDPS      {64*t}(DI), Z17, Z17")
        p(f"\tVMOVUPS     Z17, {64*t}(DI)")


def loop_end(name, T, block, act, mins=False):
    """Next super-block; then store each token's 16 sums (acc − accm with
    mins, whose accumulators pair as 128 bytes a token)."""
    # loop_head's folds and the tile's fold calls are counted apart: a line
    # left over would be asked for here, all at once, as before 270525f.
    assert not pending, f"{name}: {len(pending)} lines not prefetched: the tile folds fewer times than loop_head was told"
    p(f"\tADDQ ${block}, SI")
    p(f"\tADDQ ${act}, BX")
    p("\tDECQ CX")
    p(f"\tJNZ  {name}_loop")
    p(f"{name}_store:")
    p("\tMOVQ out+0(FP), SI")
    p("\tMOVQ ldo+32(FP), DX")
    p("\tSHLQ $2, DX")
    for t in range(T):
        if mins:
            p(f"\tVMOVUPS {128*t}(DI), Z16")
            p(f"\tVSUBPS  {128*t+64}(DI), Z16, Z16")
        else:
            p(f"\tVMOVUPS {64*t}(DI), Z16")
        p("\tVMOVUPS Z16, (SI)")
        if t + 1 < T:
            p("\tADDQ    DX, SI")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def chains(T):
    """Independent VPDPBUSD chains per token (a T-token tile has T·chains
    accumulators, Z8 on): enough to hide the latency at small T."""
    return 4 if T == 1 else 2 if T <= 3 else 1


def fold(T, ch, n):
    """Add each token's n chains into its first (and prefetch the
    sub-block's share of lines)."""
    prefetch(per)
    for t in range(T):
        if n == 4:
            p(f"\tVPADDD {ch(t, 1)}, {ch(t, 0)}, {ch(t, 0)}")
            p(f"\tVPADDD {ch(t, 3)}, {ch(t, 2)}, {ch(t, 2)}")
            p(f"\tVPADDD {ch(t, 2)}, {ch(t, 0)}, {ch(t, 0)}")
        elif n == 2:
            p(f"\tVPADDD {ch(t, 1)}, {ch(t, 0)}, {ch(t, 0)}")


def scaled_add(T, ch, z, first):
    """isum_t (Z{t}) += the sub-block's per-row scales (z) × its sum
    (the token's first chain); the first sub-block sets it."""
    for t in range(T):
        if first:
            p(f"\tVPMULLD {z}, {ch(t, 0)}, Z{t}")
        else:
            p(f"\tVPMULLD {z}, {ch(t, 0)}, {ch(t, 0)}")
            p(f"\tVPADDD  {ch(t, 0)}, Z{t}, Z{t}")


def tile(T, q5=False):
    name = f"il{5 if q5 else 4}kT{T}VNNI"
    block, act, qs = (BLOCK5, ACT, 768) if q5 else (BLOCK, ACT, 256)
    nch = chains(T)
    begin(name)
    const("0x0f0f0f0f", "Z31")
    const("63", "Z30")
    const("15", "Z29")
    if q5:
        const("0x10101010", "Z21")
    loop_head(name, T, block, 2, 8)
    p("\tVCVTPH2PS 32(SI), Z27")
    for s in range(8):
        j, hi = s // 2, s % 2
        ch = lambda t, c: f"Z{8 + t * nch + c}"
        for t in range(T):
            for c in range(nch):
                p(f"\tVPXORD {ch(t, c)}, {ch(t, c)}, {ch(t, c)}")
        for k in range(8):
            wz = "Z26" if k % 2 == 0 else "Z25"
            q = qs + 64 * (8 * j + k)
            if hi:
                p(f"\tVPSRLW   $4, {q}(SI), {wz}")
                p(f"\tVPANDD   Z31, {wz}, {wz}")
            else:
                p(f"\tVPANDD   {q}(SI), Z31, {wz}")
            if q5:
                # Bit s of qh quad k to bit 4 (word shifts: the mask
                # keeps only bits of the same byte).
                hz, qh = ("Z20" if k % 2 == 0 else "Z19"), 256 + 64 * k
                if s == 4:
                    p(f"\tVPANDD   {qh}(SI), Z21, {hz}")
                else:
                    op = f"VPSLLW   ${4-s}" if s < 4 else f"VPSRLW   ${s-4}"
                    p(f"\t{op}, {qh}(SI), {hz}")
                    p(f"\tVPANDD   Z21, {hz}, {hz}")
                p(f"\tVPORD    {hz}, {wz}, {wz}")
            for t in range(T):
                p(f"\tVPDPBUSD.BCST {256*t+32*s+4*k}(BX), {wz}, {ch(t, k % nch)}")
        fold(T, ch, nch)
        scale(s, "Z24", "Z23")
        scaled_add(T, ch, "Z24", s == 0)
    # msum_t in Z8+t: Σ_i (m_2i, m_2i+1)·(pair sums of token t).
    for t in range(T):
        p(f"\tVPXORD Z{8+t}, Z{8+t}, Z{8+t}")
    for i in range(4):
        scale(2 * i, "Z24", "Z23", mins=True)
        scale(2 * i + 1, "Z22", "Z23", mins=True)
        p("\tVPSLLD $16, Z22, Z22")
        p("\tVPORD  Z22, Z24, Z24")
        for t in range(T):
            p(f"\tVPDPWSSD.BCST {2080+16*t+4*i}(BX), Z24, Z{8+t}")
    # acc += float32(isum)·float32(d·xd), accm += float32(msum)·float32(dmin·xd).
    for t in range(T):
        p(f"\tVMULPS.BCST {2048+4*t}(BX), Z28, Z16")
        p(f"\tVCVTDQ2PS   Z{t}, Z17")
        p("\tVMULPS      Z16, Z17, Z17")
        p(f"\tVADDPS      {128*t}(DI), Z17, Z17")
        p(f"\tVMOVUPS     Z17, {128*t}(DI)")
        p(f"\tVMULPS.BCST {2048+4*t}(BX), Z27, Z18")
        p(f"\tVCVTDQ2PS   Z{8+t}, Z19")
        p("\tVMULPS      Z18, Z19, Z19")
        p(f"\tVADDPS      {128*t+64}(DI), Z19, Z19")
        p(f"\tVMOVUPS     Z19, {128*t+64}(DI)")
    loop_end(name, T, block, act, mins=True)


def tile6(T):
    name = f"il6kT{T}VNNI"
    nch = chains(T)
    begin(name)
    const("0x0f0f0f0f", "Z31")
    const("0x30303030", "Z30")
    loop_head(name, T, BLOCK6, 1, 16)
    ch = lambda t, c: f"Z{8 + t * nch + c}"
    for h in range(2):
        for c in range(4):
            for half in range(2):
                g = 8 * h + 2 * c + half
                for t in range(T):
                    p(f"\tVPBROADCASTD {2080+64*t+4*g}(BX), {ch(t, 0)}")
                    for cc in range(1, nch):
                        p(f"\tVPXORD {ch(t, cc)}, {ch(t, cc)}, {ch(t, cc)}")
                for k in range(4 * half, 4 * half + 4):
                    wz, hz = ("Z26", "Z24") if k % 2 == 0 else ("Z25", "Z23")
                    ql = 288 + 64 * (16 * h + 8 * (c % 2) + k)
                    qh = 2336 + 64 * (8 * h + k)
                    if c < 2:
                        p(f"\tVPANDD   {ql}(SI), Z31, {wz}")
                    else:
                        p(f"\tVPSRLW   $4, {ql}(SI), {wz}")
                        p(f"\tVPANDD   Z31, {wz}, {wz}")
                    # Bits 2c, 2c+1 of qh to bits 4, 5.
                    if c == 2:
                        p(f"\tVPANDD   {qh}(SI), Z30, {hz}")
                    else:
                        op = {0: "VPSLLW   $4", 1: "VPSLLW   $2", 3: "VPSRLW   $2"}[c]
                        p(f"\t{op}, {qh}(SI), {hz}")
                        p(f"\tVPANDD   Z30, {hz}, {hz}")
                    p(f"\tVPORD    {hz}, {wz}, {wz}")
                    for t in range(T):
                        p(f"\tVPDPBUSD.BCST {256*t+128*h+32*c+4*k}(BX), {wz}, {ch(t, k % nch)}")
                fold(T, ch, nch)
                p(f"\tVPMOVSXBD {32+16*g}(SI), Z22")
                scaled_add(T, ch, "Z22", g == 0)
    float_step(T)
    loop_end(name, T, BLOCK6, ACT6)


def tilexs(T):
    name = f"il4xsT{T}VNNI"
    nch = chains(T)
    begin(name)
    const("0x0f0f0f0f", "Z31")
    p("\tVBROADCASTI32X4 iq4lvl<>(SB), Z30")
    const("15", "Z29")
    const("48", "Z27")
    const("32", "Z21")
    loop_head(name, T, BLOCKXS, 1, 8)
    p("\tVPMOVZXWD 32(SI), Z20")
    ch = lambda t, c: f"Z{8 + t * nch + c}"
    for ib in range(8):
        for t in range(T):
            p(f"\tVPBROADCASTD {2080+32*t+4*ib}(BX), {ch(t, 0)}")
            for c in range(1, nch):
                p(f"\tVPXORD {ch(t, c)}, {ch(t, c)}, {ch(t, c)}")
        # Quad k's low nibbles are values 4k.., its high ones 16+4k.., each
        # looked up as level+128.
        for v in range(8):
            k, hi = v % 4, v // 4
            wz = "Z26" if v % 2 == 0 else "Z25"
            q = 128 + 64 * (4 * ib + k)
            if hi:
                p(f"\tVPSRLW   $4, {q}(SI), {wz}")
                p(f"\tVPANDD   Z31, {wz}, {wz}")
            else:
                p(f"\tVPANDD   {q}(SI), Z31, {wz}")
            p(f"\tVPSHUFB  {wz}, Z30, {wz}")
            for t in range(T):
                p(f"\tVPDPBUSD.BCST {256*t+32*ib+16*hi+4*k}(BX), {wz}, {ch(t, v % nch)}")
        fold(T, ch, nch)
        # ls-32 of the 16 rows: nibble ib%2 of scales_l[ib/2], bits 2ib,
        # 2ib+1 of scales_h to bits 4, 5.
        p(f"\tVPMOVZXBD {64+16*(ib//2)}(SI), Z24")
        if ib % 2:
            p("\tVPSRLD    $4, Z24, Z24")
        else:
            p("\tVPANDD    Z29, Z24, Z24")
        if 2 * ib < 4:
            p(f"\tVPSLLD    ${4-2*ib}, Z20, Z23")
        elif 2 * ib > 4:
            p(f"\tVPSRLD    ${2*ib-4}, Z20, Z23")
        if 2 * ib == 4:
            p("\tVPANDD    Z27, Z20, Z23")
        else:
            p("\tVPANDD    Z27, Z23, Z23")
        p("\tVPORD     Z23, Z24, Z24")
        p("\tVPSUBD    Z21, Z24, Z24")
        scaled_add(T, ch, "Z24", ib == 0)
    float_step(T)
    loop_end(name, T, BLOCKXS, ACTXS)


def tile23(T, q3):
    """Q2_K (il2k) and Q3_K (il3k): quad k of qs (k = 8n+kk) holds, at bits
    2j, values 4kk..4kk+3 of the 32 of j in half n (sub-block 8n+2j+kk/4);
    Q3_K's third bit of them is bit 4n+j of hmask quad kk, moved to bit 2.
    Each sub-block of 16 values (4 quads) starts at 0 (Q2_K) or the token's
    -4·sum of it (Q3_K); its sum times the rows' scale (VPMULLD: Q2_K's low
    nibble, Q3_K's 6-bit scale - 32) goes into isum. Q2_K's mins go in as
    Q4_K's, by VPDPWSSD of (m_2i, m_2i+1) words with the token's sums of
    sub-blocks 2i and 2i+1 (8 dwords at 2080+32t), in their own float
    step."""
    name = f"il{3 if q3 else 2}kT{T}VNNI"
    block, act = (BLOCK3, ACT3) if q3 else (BLOCK2, ACT2)
    qs, sc = (224, 32) if q3 else (320, 64)
    nch = chains(T)
    begin(name)
    const("0x03030303", "Z31")
    const("15", "Z29")
    if q3:
        const("0x04040404", "Z30")
        const("3", "Z21")
        const("32", "Z20")
    loop_head(name, T, block, 1 if q3 else 2, 16)
    if not q3:
        p("\tVCVTPH2PS 32(SI), Z27")
    ch = lambda t, c: f"Z{8 + t * nch + c}"
    for n in range(2):
        for j in range(4):
            for half in range(2):
                g = 8 * n + 2 * j + half
                for t in range(T):
                    if q3:
                        p(f"\tVPBROADCASTD {2080+64*t+4*g}(BX), {ch(t, 0)}")
                    else:
                        p(f"\tVPXORD {ch(t, 0)}, {ch(t, 0)}, {ch(t, 0)}")
                    for c in range(1, nch):
                        p(f"\tVPXORD {ch(t, c)}, {ch(t, c)}, {ch(t, c)}")
                for kk in range(4 * half, 4 * half + 4):
                    wz, hz = ("Z26", "Z24") if kk % 2 == 0 else ("Z25", "Z23")
                    q = qs + 64 * (8 * n + kk)
                    if j == 0:
                        p(f"\tVPANDD   {q}(SI), Z31, {wz}")
                    else:
                        p(f"\tVPSRLW   ${2*j}, {q}(SI), {wz}")
                        p(f"\tVPANDD   Z31, {wz}, {wz}")
                    if q3:
                        # Bit 4n+j of hmask quad kk to bit 2 (word shifts:
                        # the mask keeps only bits of the same byte).
                        b, hm = 4 * n + j, 1248 + 64 * kk
                        if b == 2:
                            p(f"\tVPANDD   {hm}(SI), Z30, {hz}")
                        else:
                            op = f"VPSLLW   ${2-b}" if b < 2 else f"VPSRLW   ${b-2}"
                            p(f"\t{op}, {hm}(SI), {hz}")
                            p(f"\tVPANDD   Z30, {hz}, {hz}")
                        p(f"\tVPORD    {hz}, {wz}, {wz}")
                    for t in range(T):
                        p(f"\tVPDPBUSD.BCST {256*t+128*n+32*j+4*kk}(BX), {wz}, {ch(t, kk % nch)}")
                fold(T, ch, nch)
                if q3:
                    # gguf.Q3KScale(g) - 32 of the 16 rows.
                    p(f"\tVPMOVZXBD {sc+16*(g%8)}(SI), Z22")
                    if g >= 8:
                        p("\tVPSRLD    $4, Z22, Z22")
                    else:
                        p("\tVPANDD    Z29, Z22, Z22")
                    p(f"\tVPMOVZXBD {sc+16*(8+g%4)}(SI), Z23")
                    if g >= 4:
                        p(f"\tVPSRLD    ${2*(g//4)}, Z23, Z23")
                    p("\tVPANDD    Z21, Z23, Z23")
                    p("\tVPSLLD    $4, Z23, Z23")
                    p("\tVPORD     Z23, Z22, Z22")
                    p("\tVPSUBD    Z20, Z22, Z22")
                else:
                    p(f"\tVPMOVZXBD {sc+16*g}(SI), Z22")
                    p("\tVPANDD    Z29, Z22, Z22")
                scaled_add(T, ch, "Z22", g == 0)
    if q3:
        float_step(T)
        loop_end(name, T, block, act)
        return
    for t in range(T):
        p(f"\tVPXORD Z{8+t}, Z{8+t}, Z{8+t}")
    for i in range(8):
        p(f"\tVPMOVZXBD {sc+32*i}(SI), Z24")
        p("\tVPSRLD    $4, Z24, Z24")
        p(f"\tVPMOVZXBD {sc+32*i+16}(SI), Z22")
        p("\tVPSRLD    $4, Z22, Z22")
        p("\tVPSLLD    $16, Z22, Z22")
        p("\tVPORD     Z22, Z24, Z24")
        for t in range(T):
            p(f"\tVPDPWSSD.BCST {2080+32*t+4*i}(BX), Z24, Z{8+t}")
    for t in range(T):
        p(f"\tVMULPS.BCST {2048+4*t}(BX), Z28, Z16")
        p(f"\tVCVTDQ2PS   Z{t}, Z17")
        p("\tVMULPS      Z16, Z17, Z17")
        p(f"\tVADDPS      {128*t}(DI), Z17, Z17")
        p(f"\tVMOVUPS     Z17, {128*t}(DI)")
        p(f"\tVMULPS.BCST {2048+4*t}(BX), Z27, Z18")
        p(f"\tVCVTDQ2PS   Z{8+t}, Z19")
        p("\tVMULPS      Z18, Z19, Z19")
        p(f"\tVADDPS      {128*t+64}(DI), Z19, Z19")
        p(f"\tVMOVUPS     Z19, {128*t+64}(DI)")
    loop_end(name, T, block, act, mins=True)


header("ilk_gen.py", "ilk_amd64.s")
p("// Interleaved K-quant tiles; see ilk_gen.py.")
p()
# IQ4_XS's levels (gguf.IQ4NLValues) + 128, the VPSHUFB table.
for i, v in enumerate([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]):
    p(f"DATA iq4lvl<>+{i}(SB)/1, ${v+128}")
p("GLOBL iq4lvl<>(SB), RODATA|NOPTR, $16")
p()
for T in range(1, 9):
    tile(T)
for T in range(1, 9):
    tile(T, q5=True)
for T in range(1, 9):
    tile6(T)
for T in range(1, 9):
    tilexs(T)
for T in range(1, 9):
    tile23(T, q3=False)
for T in range(1, 9):
    tile23(T, q3=True)
sys.stdout.write("\n".join(out) + "\n")
