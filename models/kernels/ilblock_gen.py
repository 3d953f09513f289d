# Generates ilblock_amd64.s: python3 ilblock_gen.py > ilblock_amd64.s.
#
# Tiles of the interleaved-block products (ilblock.go): one row group (16
# rows) × T tokens of one packed activation group. Each (row, token) keeps
# one exact int32 sum per block in its own lane, then one float step per
# block: acc = fma(float32(isum), float32(d·xd), acc), in block order — ilblock.go's
# order, so every T, ISA and thread count gives the same bits.
#
# AVX-512 VNNI (zmm, 16 rows in lanes): the block's 8 weight registers
# (IL8: 8 quads of value+128 bytes; IL4/IL4G: 4 quads of nibbles split into
# low and high) are loaded once and used for every token; per token, the
# int32 accumulator starts at the activation's -off·Σx and takes 8
# VPDPBUSD with the token's 4-byte groups broadcast from memory. IL4M and
# IL8M keep the block's mins in Z29.
#
# AVX2 (ymm, 8 rows in lanes, the two halves of a group one after the
# other): VPMADDUBSW per 4-byte group. IL8 by the sign trick on the signed
# values (|w| × sign(w)·x, so no offset), VPMADDWD to int32 per group: a
# pair of products reaches 2·128·127, so two groups would overflow int16.
# IL4 with the unsigned nibbles directly: a pair is at most 2·15·127 = 3810,
# so the 8 groups of a block add up exactly in int16 (VPADDW, at most
# 30480), then one VPMADDWD to int32 and the -8·Σx correction per block.
# IL4NL (IQ4_NL) looks its nibbles up with VPSHUFB: as level+128 (1..241)
# for VPDPBUSD, whose accumulator starts at -128·Σx as IL8's; on AVX2 as
# the signed level for IL8's sign trick, since a pair of level+128 products
# reaches 2·241·127 and VPMADDUBSW would saturate.
#
# IL4M (Q4_1) and IL8M (Q5_1) have unsigned values, which go into VPDPBUSD
# and VPMADDUBSW as they are: the int32 accumulator starts at 0 and the
# activation's stored sum is Σx, for the min term of each block,
# acc = fma(m, float32(xd·float32(Σx)), acc), after the block's scale step.
# On AVX2, IL4M is IL4 (a pair is at most 2·15·127), IL8M takes VPMADDWD
# per group as IL8 (a pair reaches 2·31·127 = 7874, so 8 groups would
# overflow int16).
#
# Arguments: out (row group's first row, token 0), w (the group's block 0),
# nb blocks, xa (the activation group's block 0, 320 bytes a block), ldo
# (out's token stride in floats), gs (IL4G: the group's scales, 16 floats
# per scale group), gb (IL4G: blocks per scale group). All 16 rows are
# stored; the caller gives a last, partial group a buffer.
import sys

from asmgen import out, p, bytes_const, header


# PF: how many blocks ahead a tile of 3 or more tokens prefetches its
# weights. Such a tile is compute-bound, and while it computes, the hardware
# prefetcher alone does not keep the next blocks coming: a 16-row Q8_0 decode
# step of bench110M took 15.7 ms without and 12.9 with PF = 32 (min of 6
# alternating runs; 8, 16, 24, 48 and 64 measured too, 32 to 48 best).
# The one- and two-token tiles of Q8_0, Q5_0 and Q4_0 prefetch too: a
# decode streams the weights faster than the hardware prefetchers alone keep
# up with. bench110M at 1 thread, --gen 256 --prompt-tokens 16, alternating
# pairs, each pair faster with (BENCHMARKS.md has the rest):
# Q4_0 339-493 -> 405-526 tok/s (avx512vnni, seven pairs), 347-396 -> 390-438
# (avx2, four); Q8_0 211-234 -> 222-248 (avx512vnni, four), 136-161 -> 161-196
# (avx2, three). The int4 groups' (int4-gN-a8) showed no gain.
PF = 32
BB = {"IL8": 544, "IL4": 288, "IL4G": 256, "IL4NL": 288, "IL4M": 320, "IL8M": 576}
MIN = ("IL4M", "IL8M")  # kinds with a min per block (f16 mins after the scales)
Q0 = {"IL4G": 0, "IL4M": 64, "IL8M": 64}  # where the quads start; else 32
ARGS = "out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int"


def const_bytes(v, x, reg="AX"):
    # The broadcast from a general register is EVEX (AVX-512) only: the
    # AVX2 kernels take asmgen's bytes_const, through an xmm.
    p(f"\tMOVL         ${v}, {reg}")
    p(f"\tVPBROADCASTD {reg}, {x}")


def isum_start(kind, z, o):
    # The int32 sum starts at the correction -off·Σx, or 0 for the min kinds.
    if kind in MIN:
        p(f"\tVPXORD {z}, {z}, {z}")
    else:
        p(f"\tVPBROADCASTD {o+36}(BX), {z}")


def vnni(kind, T, stream=False):
    name = f"il{kind[2:].lower()}T{T}VNNI{'NT' if stream else ''}"
    bb = BB[kind]
    q0 = Q0.get(kind, 32)
    p(f"// func {name}({ARGS})")
    p(f"TEXT ·{name}(SB), NOSPLIT, $0-56")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ nb+16(FP), CX")
    p("\tMOVQ xa+24(FP), BX")
    if kind not in ("IL8", "IL8M"):
        const_bytes("0x0f0f0f0f", "Z26")
    if kind == "IL4NL":
        p("\tVBROADCASTI32X4 ilnl128<>(SB), Z28")
    if kind == "IL4G":
        p("\tMOVQ gs+40(FP), DX")
        p("\tXORQ AX, AX")
    for t in range(T):
        p(f"\tVXORPS Z{18+t}, Z{18+t}, Z{18+t}")
    p(f"{name}_loop:")
    if T >= 3 or stream or kind != "IL4G":
        # Fetch the block PF blocks ahead, one line at a time (past the
        # last row group it touches the next weight: harmless). A tile of
        # 3 or more tokens fetches non-temporally: its weights are used once
        # a step, and kept out of the outer caches they likely leave the KV
        # cache and activations there; bench110M Q8_0 batch-8 decode
        # 1.18-1.27x (BENCHMARKS.md), Q4_0's and bench15M's the same. The
        # 1- and 2-token tiles come in two kinds: PREFETCHT0 for a model
        # whose weights stay in the last-level cache from one step to the
        # next (NTA there: 0.63-0.85x), and NT for one that streams them
        # from memory (ilStreamTiles).
        for off in range(0, bb, 64):
            p(f"\t{'PREFETCHNTA' if T >= 3 or stream else 'PREFETCHT0'} {PF*bb+off}(SI)")
    if kind == "IL4G":
        p("\tTESTQ AX, AX")
        p(f"\tJNZ   {name}_same")
        p("\tVMOVUPS (DX), Z8")
        p("\tADDQ $64, DX")
        p("\tMOVQ gb+48(FP), AX")
        p(f"{name}_same:")
        p("\tDECQ AX")
    else:
        p("\tVCVTPH2PS (SI), Z8")
    if kind in MIN:
        p("\tVCVTPH2PS 32(SI), Z29")
    if kind in ("IL8", "IL8M"):
        for k in range(8):
            p(f"\tVMOVDQU64 {q0+64*k}(SI), Z{k}")
    else:
        for j in range(4):
            p(f"\tVMOVDQU64 {q0+64*j}(SI), Z27")
            p(f"\tVPSRLW    $4, Z27, Z{4+j}")
            p(f"\tVPANDD    Z26, Z27, Z{j}")
            p(f"\tVPANDD    Z26, Z{4+j}, Z{4+j}")
            if kind == "IL4NL":
                p(f"\tVPSHUFB   Z{j}, Z28, Z{j}")
                p(f"\tVPSHUFB   Z{4+j}, Z28, Z{4+j}")
    if T >= 3:
        # Many tokens: one int32 chain per token, the VPDPBUSDs issued
        # weight-register-major across the tokens so that neighbours are
        # independent (4.48 VPDPBUSD/ns against 4.25 token-major at b3f3c1a,
        # in the loop BenchmarkILTileInCache now runs).
        #
        # IL8 (Q8_0) is then bound by loads, not by VPDPBUSD: each one
        # broadcasts its 4 bytes from memory, and with the weights, starts,
        # scales and prefetches a block makes ~98 loads for 64 VPDPBUSD,
        # at two loads a cycle. So the quads 4-7 of each token come from
        # one 16-byte load copied to the four lanes (VBROADCASTI32X4) and
        # a VPSHUFD each, in shuffle units that are otherwise idle. Taking
        # all 8 quads so was slower (shuffles then compete), 4 best
        # (BENCHMARKS.md). Same bytes, same sums. Q4_0's tile (IL4) got
        # slower so: its nibble unpacking already keeps those units busy.
        shuffled = range(4, 8) if kind == "IL8" else range(8, 8)
        for t in range(T):
            isum_start(kind, f"Z{10+t}", 40 * t)
        for k in range(8):
            if k in shuffled:
                continue
            for t in range(T):
                p(f"\tVPDPBUSD.BCST {40*t+4*k}(BX), Z{k}, Z{10+t}")
        for t in range(T if shuffled else 0):
            p(f"\tVBROADCASTI32X4 {40*t+16}(BX), Z27")
            for k in shuffled:
                tmp = 28 + k % 4
                p(f"\tVPSHUFD ${0x55 * (k % 4)}, Z27, Z{tmp}")
                p(f"\tVPDPBUSD Z{tmp}, Z{k}, Z{10+t}")
    for t in range(T):
        a = 10 + t
        if T <= 2:
            isum_start(kind, f"Z{a}", 40 * t)
            # Few tokens: four int32 chains per token instead of one, so the
            # VPDPBUSD latency does not serialize the block (integer sums
            # are exact in any order).
            ch = [a] + [12 + 3 * t + c for c in range(3)]
            for c in ch[1:]:
                p(f"\tVPXORD Z{c}, Z{c}, Z{c}")
            for k in range(8):
                p(f"\tVPDPBUSD.BCST {40*t+4*k}(BX), Z{k}, Z{ch[k % 4]}")
            p(f"\tVPADDD Z{ch[1]}, Z{ch[0]}, Z{ch[0]}")
            p(f"\tVPADDD Z{ch[3]}, Z{ch[2]}, Z{ch[2]}")
            p(f"\tVPADDD Z{ch[2]}, Z{ch[0]}, Z{ch[0]}")
        p(f"\tVCVTDQ2PS Z{a}, Z{a}")
        p(f"\tVMULPS.BCST {40*t+32}(BX), Z8, Z9")
        p(f"\tVFMADD231PS Z9, Z{a}, Z{18+t}")
        if kind in MIN:
            p(f"\tVPBROADCASTD {40*t+36}(BX), Z9")
            p("\tVCVTDQ2PS Z9, Z9")
            p(f"\tVMULPS.BCST {40*t+32}(BX), Z9, Z9")
            p(f"\tVFMADD231PS Z9, Z29, Z{18+t}")
    p(f"\tADDQ ${bb}, SI")
    p("\tADDQ $320, BX")
    p("\tDECQ CX")
    p(f"\tJNZ  {name}_loop")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+32(FP), DX")
    p("\tSHLQ $2, DX")
    for t in range(T):
        p(f"\tVMOVUPS Z{18+t}, (DI)")
        if t + 1 < T:
            p("\tADDQ DX, DI")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def vpdpbusd_vex(dst, src1, src2):
    """VPDPBUSD ymm{dst}, ymm{src1}, ymm{src2} in its VEX form (AVX-VNNI),
    as bytes: Go's assembler encodes VPDPBUSD as EVEX (AVX-512 VNNI) only.
    C4, then R̄X̄B̄ and map 0F38, then W0 v̄v̄v̄v̄ L1 pp=66, opcode 50, ModRM."""
    b1 = (0 if dst >= 8 else 0x80) | 0x40 | (0 if src2 >= 8 else 0x20) | 0x02
    b2 = ((~src1 & 15) << 3) | 0x05
    modrm = 0xC0 | ((dst & 7) << 3) | (src2 & 7)
    p(f"\tBYTE $0xc4; BYTE ${b1:#04x}; BYTE ${b2:#04x}; BYTE $0x50; BYTE ${modrm:#04x} // VPDPBUSD Y{src2}, Y{src1}, Y{dst} (VEX)")


def avxvnni(kind, T):
    """IL8's or IL4's 16 rows × T ≤ 4 tokens on AVX-VNNI: both halves of the
    group in one pass, so each token's broadcast quad feeds two VPDPBUSD
    (rows 0-7 and 8-15). Y(2t+h) int sums of token t, half h, from the
    correction -off·Σx (the zmm tiles' sum: value+128 bytes, or IL4's
    nibbles, times x); Y8 Y9 the halves' weights (IL4: the high nibbles, Y11
    Y12 the low), Y10 x, Y11 Y12 the halves' scales, Y13 s, Y15 xd; the
    float sums in Y4-Y7 (T ≤ 2) or the frame (64 bytes a token, through
    Y14)."""
    name = f"il{kind[2:].lower()}T{T}AVXVNNI"
    bb, q0 = BB[kind], 32
    mem = T > 2
    acc = lambda t, h: f"{64*t+32*h}(SP)" if mem else f"Y{4+2*t+h}"
    p(f"// func {name}({ARGS})")
    p(f"TEXT ·{name}(SB), NOSPLIT, ${64*T if mem else 0}-56")
    p("\tMOVQ w+8(FP), SI")
    p("\tMOVQ nb+16(FP), CX")
    p("\tMOVQ xa+24(FP), BX")
    if mem:
        p("\tVXORPS Y14, Y14, Y14")
    for t in range(T):
        for h in range(2):
            if mem:
                p(f"\tVMOVUPS Y14, {acc(t, h)}")
            else:
                p(f"\tVXORPS {acc(t, h)}, {acc(t, h)}, {acc(t, h)}")
    p(f"{name}_loop:")
    for off in range(0, bb, 64):
        p(f"\tPREFETCHT0 {PF*bb+off}(SI)")
    for t in range(T):
        p(f"\tVPBROADCASTD {40*t+36}(BX), Y{2*t}")
        p(f"\tVMOVDQU Y{2*t}, Y{2*t+1}")
    def quad(k, w0, w1):
        for t in range(T):
            p(f"\tVPBROADCASTD {40*t+4*k}(BX), Y10")
            vpdpbusd_vex(2 * t, w0, 10)
            vpdpbusd_vex(2 * t + 1, w1, 10)

    for j in range(8 if kind == "IL8" else 4):
        p(f"\tVMOVDQU {q0+64*j}(SI), Y8")
        p(f"\tVMOVDQU {q0+64*j+32}(SI), Y9")
        if kind == "IL8":
            quad(j, 8, 9)
            continue
        # IL4: quad j's low nibbles, then its high ones (quad j+4).
        p("\tVPAND ilnlmask<>(SB), Y8, Y11")
        p("\tVPAND ilnlmask<>(SB), Y9, Y12")
        quad(j, 11, 12)
        p("\tVPSRLW $4, Y8, Y8")
        p("\tVPSRLW $4, Y9, Y9")
        p("\tVPAND ilnlmask<>(SB), Y8, Y8")
        p("\tVPAND ilnlmask<>(SB), Y9, Y9")
        quad(j + 4, 8, 9)
    p("\tVCVTPH2PS (SI), Y11")
    p("\tVCVTPH2PS 16(SI), Y12")
    for t in range(T):
        p(f"\tVBROADCASTSS {40*t+32}(BX), Y15")
        for h in range(2):
            z = 2 * t + h
            p(f"\tVCVTDQ2PS Y{z}, Y{z}")
            p(f"\tVMULPS Y15, Y{11+h}, Y13")
            if mem:
                p(f"\tVMOVUPS {acc(t, h)}, Y14")
                p(f"\tVFMADD231PS Y13, Y{z}, Y14")
                p(f"\tVMOVUPS Y14, {acc(t, h)}")
            else:
                p(f"\tVFMADD231PS Y13, Y{z}, {acc(t, h)}")
    p(f"\tADDQ ${bb}, SI")
    p("\tADDQ $320, BX")
    p("\tDECQ CX")
    p(f"\tJNZ  {name}_loop")
    p("\tMOVQ out+0(FP), DI")
    p("\tMOVQ ldo+32(FP), DX")
    p("\tSHLQ $2, DX")
    for t in range(T):
        for h in range(2):
            if mem:
                p(f"\tVMOVUPS {acc(t, h)}, Y14")
            p(f"\tVMOVUPS {'Y14' if mem else acc(t, h)}, {32*h}(DI)")
        if t + 1 < T:
            p("\tADDQ DX, DI")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


def avx2(kind, T, stream=False):
    """8 rows (half h of the group: byte offset 32h in every quad, scales
    2·8h) × T ≤ 8 tokens. Y0-Y3 int sums, Y4-Y7 float sums, Y8 scales, Y9
    s, Y10 weights (IL8, IL4NL), Y11 |w| or nibbles, Y12 x, Y13 products (IL4M, IL8M:
    then the mins),
    Y14 int16 ones, Y15 0x80 or 0x0f bytes (IL4NL: the signed levels, its
    0x0f bytes in memory). With T > 4 the int sums take Y0-Y7 and the float
    sums live in the frame (32 bytes a token at t·32(SP)), each block's float
    step loading, adding into and storing its token's through Y10: the
    block's weights are then read and prepared once for up to 8 tokens
    instead of 4, for one load and one store a token and block."""
    name = f"il{kind[2:].lower()}T{T}AVX2{'NT' if stream else ''}"
    bb = BB[kind]
    q0 = Q0.get(kind, 32)
    mem = T > 4  # float sums in the frame
    p(f"// func {name}({ARGS})")
    p(f"TEXT ·{name}(SB), NOSPLIT, ${32*T if mem else 0}-56")
    p("\tMOVQ $0x00010001, AX")
    p("\tVMOVQ AX, X14")
    p("\tVPBROADCASTD X14, Y14")
    if kind == "IL4NL":
        p("\tVBROADCASTI128 ilnls8<>(SB), Y15")
    elif kind != "IL8M":
        bytes_const("0x80808080" if kind == "IL8" else "0x0f0f0f0f", "X15", "Y15")
    p("\tMOVQ out+0(FP), DI")
    p("\tXORQ R9, R9")  # half: 0, then 32 (quad offset); scales at 2·8h
    p(f"{name}_half:")
    p("\tMOVQ w+8(FP), SI")
    p("\tADDQ R9, SI")  # SI + 32h: quads of this half
    p("\tMOVQ w+8(FP), R10")
    p("\tMOVQ R9, R11")
    p("\tSHRQ $1, R11")
    p("\tADDQ R11, R10")  # R10: scales of this half (IL8, IL4), +16h bytes
    p("\tMOVQ nb+16(FP), CX")
    p("\tMOVQ xa+24(FP), BX")
    if kind == "IL4G":
        p("\tMOVQ gs+40(FP), DX")
        p("\tADDQ R11, DX")
        p("\tADDQ R11, DX")  # +32h bytes: 8 floats of this half
        p("\tXORQ AX, AX")
    if mem:
        p("\tVXORPS Y10, Y10, Y10")
        for t in range(T):
            p(f"\tVMOVUPS Y10, {32*t}(SP)")
    else:
        for t in range(T):
            p(f"\tVXORPS Y{4+t}, Y{4+t}, Y{4+t}")
    p(f"{name}_loop:")
    if T >= 3 or stream or kind != "IL4G":
        for off in range(0, bb, 64):  # SI is 32h past the block: same lines
            p(f"\t{'PREFETCHNTA' if stream else 'PREFETCHT0'} {PF*bb+off}(SI)")
    if kind == "IL4G":
        p("\tTESTQ AX, AX")
        p(f"\tJNZ   {name}_same")
        p("\tVMOVUPS (DX), Y8")
        p("\tADDQ $64, DX")
        p("\tMOVQ gb+48(FP), AX")
        p(f"{name}_same:")
        p("\tDECQ AX")
    else:
        p("\tVCVTPH2PS (R10), Y8")
    if kind == "IL8M":
        for t in range(T):
            p(f"\tVPXOR Y{t}, Y{t}, Y{t}")
        for k in range(8):
            p(f"\tVMOVDQU {q0+64*k}(SI), Y11")
            for t in range(T):
                p(f"\tVPBROADCASTD {40*t+4*k}(BX), Y12")
                p("\tVPMADDUBSW Y12, Y11, Y13")
                p("\tVPMADDWD Y14, Y13, Y13")
                p(f"\tVPADDD Y13, Y{t}, Y{t}")
    elif kind in ("IL8", "IL4NL"):
        for t in range(T):
            p(f"\tVPXOR Y{t}, Y{t}, Y{t}")
        for k in range(8):
            # Y10: the signed values
            if kind == "IL8":
                p(f"\tVPXOR {q0+64*k}(SI), Y15, Y10")
            else:
                j, hl = k % 4, k // 4
                p(f"\tVMOVDQU {q0+64*j}(SI), Y10")
                if hl:
                    p("\tVPSRLW $4, Y10, Y10")
                p("\tVPAND ilnlmask<>(SB), Y10, Y10")
                p("\tVPSHUFB Y10, Y15, Y10")
            p("\tVPABSB Y10, Y11")
            for t in range(T):
                p(f"\tVPBROADCASTD {40*t+4*k}(BX), Y12")
                p("\tVPSIGNB Y10, Y12, Y12")
                p("\tVPMADDUBSW Y12, Y11, Y13")
                p("\tVPMADDWD Y14, Y13, Y13")
                p(f"\tVPADDD Y13, Y{t}, Y{t}")
    else:
        # Y{t}: int16 sums of the block, then its int32 sums.
        for j in range(4):
            for hl in range(2):
                if hl == 0:
                    p(f"\tVPAND {q0+64*j}(SI), Y15, Y11")
                else:
                    p(f"\tVMOVDQU {q0+64*j}(SI), Y11")
                    p("\tVPSRLW $4, Y11, Y11")
                    p("\tVPAND Y15, Y11, Y11")
                k = j + 4 * hl
                for t in range(T):
                    p(f"\tVPBROADCASTD {40*t+4*k}(BX), Y12")
                    if j == 0 and hl == 0:
                        p(f"\tVPMADDUBSW Y12, Y11, Y{t}")
                    else:
                        p("\tVPMADDUBSW Y12, Y11, Y13")
                        p(f"\tVPADDW Y13, Y{t}, Y{t}")
        for t in range(T):
            p(f"\tVPMADDWD Y14, Y{t}, Y{t}")
            if kind not in MIN:
                p(f"\tVPBROADCASTD {40*t+36}(BX), Y12")
                p(f"\tVPADDD Y12, Y{t}, Y{t}")
    if kind in MIN:
        p("\tVCVTPH2PS 32(R10), Y13")  # this half's mins
    for t in range(T):
        acc = "Y10" if mem else f"Y{4+t}"
        if mem:
            p(f"\tVMOVUPS {32*t}(SP), Y10")
        p(f"\tVCVTDQ2PS Y{t}, Y{t}")
        p(f"\tVBROADCASTSS {40*t+32}(BX), Y9")
        p("\tVMULPS Y9, Y8, Y9")
        p(f"\tVFMADD231PS Y9, Y{t}, {acc}")
        if kind in MIN:
            p(f"\tVPBROADCASTD {40*t+36}(BX), Y9")
            p("\tVCVTDQ2PS Y9, Y9")
            p(f"\tVBROADCASTSS {40*t+32}(BX), Y12")
            p("\tVMULPS Y12, Y9, Y9")
            p(f"\tVFMADD231PS Y9, Y13, {acc}")
        if mem:
            p(f"\tVMOVUPS Y10, {32*t}(SP)")
    p(f"\tADDQ ${bb}, SI")
    if kind != "IL4G":
        p(f"\tADDQ ${bb}, R10")
    p("\tADDQ $320, BX")
    p("\tDECQ CX")
    p(f"\tJNZ  {name}_loop")
    # Store rows 8h..8h+7 of every token.
    p("\tMOVQ R9, R11")
    p("\tSHRQ $2, R11")  # 8h
    p("\tLEAQ (DI)(R11*4), R8")
    p("\tMOVQ ldo+32(FP), DX")
    p("\tSHLQ $2, DX")
    for t in range(T):
        if mem:
            p(f"\tVMOVUPS {32*t}(SP), Y10")
        p(f"\tVMOVUPS {'Y10' if mem else f'Y{4+t}'}, (R8)")
        if t + 1 < T:
            p("\tADDQ DX, R8")
    p("\tADDQ $32, R9")
    p("\tCMPQ R9, $64")
    p(f"\tJLT  {name}_half")
    p(f"{name}_done:")
    p("\tVZEROUPPER")
    p("\tRET")
    p()


QUANT = """
// func ilQuantAVX2(dst *byte, x *float32, nb, off int)
// Quantizes one token's nb blocks of 32 floats at x to Q8_0 into its slot of
// a packed activation (ILAct.Quantize): block b's 32 int8 values at dst +
// 320b, then its float32 scale and the int32 -off·Σq. The steps of
// quantizeQ8Block: amax, id = 127/amax (0 for 0), q = round-half-even(x·id),
// scale = amax/127 rounded through f16 (VCVTPS2PH, round to nearest even).
// Y15 abs mask, Y14 byte ones, Y13 word ones, Y12 the VPACK lane order.
TEXT ·ilQuantAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ nb+16(FP), CX
	MOVQ off+24(FP), R8
	NEGQ R8
	MOVL $0x7fffffff, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x01010101, AX
	MOVQ AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x00010001, AX
	MOVQ AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU ilqperm<>(SB), Y12
	MOVL $0x42fe0000, AX // 127.0
	MOVQ AX, X11
	TESTQ CX, CX
	JZ   ilq_done
ilq_loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VANDPS Y15, Y2, Y6
	VANDPS Y15, Y3, Y7
	VMAXPS Y5, Y4, Y4
	VMAXPS Y7, Y6, Y6
	VMAXPS Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VMOVHLPS X4, X4, X5
	VMAXPS X5, X4, X4
	VMOVSHDUP X4, X5
	VMAXSS X5, X4, X4
	// d = f16(amax/127), id = amax == 0 ? 0 : 127/amax
	VDIVSS X11, X4, X5
	VCVTPS2PH $0, X5, X5
	VCVTPH2PS X5, X5
	VMOVSS X5, 32(DI)
	VXORPS X6, X6, X6
	VUCOMISS X6, X4
	JEQ  ilq_zero
	VDIVSS X4, X11, X6
ilq_zero:
	VBROADCASTSS X6, Y6
	VMULPS Y6, Y0, Y0
	VMULPS Y6, Y1, Y1
	VMULPS Y6, Y2, Y2
	VMULPS Y6, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y12, Y0
	VMOVDQU Y0, (DI)
	// -off·Σq
	VPMADDUBSW Y0, Y14, Y1
	VPMADDWD Y13, Y1, Y1
	VEXTRACTI128 $1, Y1, X2
	VPADDD X2, X1, X1
	VPSHUFD $0x4e, X1, X2
	VPADDD X2, X1, X1
	VPSHUFD $0xb1, X1, X2
	VPADDD X2, X1, X1
	VMOVD X1, AX
	IMULL R8, AX
	MOVL AX, 36(DI)
	ADDQ $128, SI
	ADDQ $320, DI
	DECQ CX
	JNZ  ilq_loop
ilq_done:
	VZEROUPPER
	RET

DATA ilqperm<>+0(SB)/4, $0
DATA ilqperm<>+4(SB)/4, $4
DATA ilqperm<>+8(SB)/4, $1
DATA ilqperm<>+12(SB)/4, $5
DATA ilqperm<>+16(SB)/4, $2
DATA ilqperm<>+20(SB)/4, $6
DATA ilqperm<>+24(SB)/4, $3
DATA ilqperm<>+28(SB)/4, $7
GLOBL ilqperm<>(SB), RODATA|NOPTR, $32
"""

header("ilblock_gen.py", "ilblock_amd64.s")
for kind in ("IL8", "IL4", "IL4G", "IL4NL", "IL4M", "IL8M"):
    for T in range(1, 9):
        vnni(kind, T)
    for T in (1, 2):
        vnni(kind, T, stream=True)
    # AVX2 tiles of 5-8 tokens only for IL8 (Q8_0, Q5_0): in L1 its 8-token
    # tile beat two 4-token ones by 5 %, Q4_0's by 2.5 %, Q5_1's lost 1 %
    # (BENCHMARKS.md, perf10).
    for T in range(1, 9 if kind == "IL8" else 5):
        avx2(kind, T)
    if kind in ("IL8", "IL4"):
        for T in range(1, 5):
            avxvnni(kind, T)
    for T in (1, 2):
        avx2(kind, T, stream=True)
sys.stdout.write("\n".join(out))
sys.stdout.write(QUANT)
# IL4NL's tables: gguf.IQ4NLValues + 128 (VNNI), the signed levels (AVX2),
# and the nibble mask (AVX2's IL4NL tiles, which have no register left for
# it, and AVX-VNNI's IL4 tiles).
LEVELS = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]
tables = []
for i, v in enumerate(LEVELS):
    tables.append(f"DATA ilnl128<>+{i}(SB)/1, ${v+128}")
tables.append("GLOBL ilnl128<>(SB), RODATA|NOPTR, $16")
for i, v in enumerate(LEVELS):
    tables.append(f"DATA ilnls8<>+{i}(SB)/1, ${v & 0xff}")
tables.append("GLOBL ilnls8<>(SB), RODATA|NOPTR, $16")
for i in range(0, 32, 8):
    tables.append(f"DATA ilnlmask<>+{i}(SB)/8, $0x0f0f0f0f0f0f0f0f")
tables.append("GLOBL ilnlmask<>(SB), RODATA|NOPTR, $32")
sys.stdout.write("\n" + "\n".join(tables) + "\n")
