package kernels

import "os"

// isaLevel names a kernel set; each level's CPU features include those of
// the levels below it, except avxvnni's VEX VPDPBUSD, which some AVX-512
// CPUs (Zen 4, Ice Lake) lack: runnable checks it apart.
//
// avxvnni is for the CPUs with AVX2 and AVX-VNNI but no AVX-512 (Intel's
// client cores since Alder Lake): there the interleaved tiles of Q8_0, Q5_0
// and Q4_0 take one VPDPBUSD a token and quad where AVX2's sign trick takes
// four instructions (Q4_0's nibbles two). Measured on this project's Zen 5
// host with CHAT_KERNELS: a bench110M Q8_0 batch-8 step 14.0-17.0 (avx2) ->
// 7.8-9.0 ms of CPU time (avxvnni), the Q4_0 4-token tile in L1 382 -> 277
// ns (BENCHMARKS.md, perf10). A decode that streams its weights from memory
// gains nothing (go-stack.md §2, "VNNI-256": within ±8 %), so the
// non-temporal 1- and 2-token tiles and the other kernels stay AVX2's.
type isaLevel int

const (
	isaGo         isaLevel = iota // pure Go
	isaAVX2                       // AVX2, FMA, F16C
	isaAVXVNNI                    // AVX2 + AVX-VNNI (VEX VPDPBUSD on ymm)
	isaAVX512                     // AVX2 + AVX-512 F, BW, DQ, VL
	isaAVX512VNNI                 // AVX-512 + AVX512_VNNI
)

var isaNames = [...]string{"go", "avx2", "avxvnni", "avx512", "avx512vnni"}

// isa is the kernel set in use: the best this CPU runs (hostISA), or a lower
// one named by CHAT_KERNELS (read once at start-up), so every path can be
// run and compared on one machine. useAsm and gemmAVX512 follow it.
var (
	isa        = capISA(hostISA, os.Getenv("CHAT_KERNELS"))
	useAsm     = isa >= isaAVX2
	gemmAVX512 = isa >= isaAVX512
)

// ISA names the kernel set in use: "go", "avx2", "avxvnni", "avx512" or
// "avx512vnni".
// Which kernels each level changes:
//
//   - avx2: every product has AVX2+FMA assembly; integer dots by VPMADDUBSW;
//     interleaved blocks (Q8_0, Q5_0, Q4_0, IQ4_NL, int4-a8) take 8-row ×
//     1-4-token tiles (Q8_0 and Q5_0 1-8), K-quant batches one-row tiles.
//   - avxvnni: Q8_0's, Q5_0's and Q4_0's interleaved tiles take VPDPBUSD
//     on ymm (VEX), 16 rows (two ymm) × 1-4 tokens; the rest as avx2.
//   - avx512: float32, f16 and bf16 batches take the pair tiles (rows × token
//     pairs), and their matvecs two rows per zmm (float32 over long rows,
//     interleaved f16 and bf16 over any rows); the
//     float-activation products of quantized weights (LUT4, FP8, I8F32)
//     dequantize two rows per zmm; the float32 GEMM takes its 12×32 tiles;
//     attention over int4 KV rows looks their codes up in the scaled
//     levels (VPERMI2PS) instead of converting them.
//   - avx512vnni: the integer dots take VPDPBUSD (VPDPWSSD for the
//     K-quants' scales) on zmm: interleaved blocks 16 rows × 1-8 tokens,
//     K-quants one row per register (matvec), one row × 4 or 8 tokens
//     (tiles), and the K-quants interleaved (16 rows × 1-8 tokens, ilk.go).
//
// Results do not depend on the level unless a function's doc says so: the
// wider kernels keep each output's float operations in the same order.
func ISA() string { return isaNames[isa] }

// capISA returns the level env names, if it is one this CPU runs and no
// higher than host; host otherwise.
func capISA(host isaLevel, env string) isaLevel {
	for l, n := range isaNames {
		if n == env && runnable(isaLevel(l)) {
			return min(host, isaLevel(l))
		}
	}
	return host
}

// runnable reports whether this CPU can run level l's kernels.
func runnable(l isaLevel) bool { return l <= hostISA && (l != isaAVXVNNI || hasAVXVNNI) }

// setISA switches the kernel set (tests and benchmarks compare the levels).
func setISA(l isaLevel) {
	isa, useAsm, gemmAVX512 = l, l >= isaAVX2, l >= isaAVX512
}
