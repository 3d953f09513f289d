package kernels

import "os"

// isaLevel names a kernel set; each level's CPU features include those of
// the levels below it.
//
// There is no AVX-VNNI level (the VEX-encoded 256-bit VPDPBUSD of Intel's
// client cores without AVX-512): the int8 matvec measured within ±8% of the
// VPMADDUBSW kernel with it (../shared/docs/go-stack.md §2, "VNNI-256"), and
// the 256-bit integer kernels here spend most of their work on the float
// steps that keep them bitwise equal to the Go versions, which VPDPBUSD does
// not shorten. Those CPUs run the avx2 kernels.
type isaLevel int

const (
	isaGo         isaLevel = iota // pure Go
	isaAVX2                       // AVX2, FMA, F16C
	isaAVX512                     // AVX2 + AVX-512 F, BW, DQ, VL
	isaAVX512VNNI                 // AVX-512 + AVX512_VNNI
)

var isaNames = [...]string{"go", "avx2", "avx512", "avx512vnni"}

// isa is the kernel set in use: the best this CPU runs (hostISA), or a lower
// one named by CHAT_KERNELS (read once at start-up), so every path can be
// run and compared on one machine. useAsm and gemmAVX512 follow it.
var (
	isa        = capISA(hostISA, os.Getenv("CHAT_KERNELS"))
	useAsm     = isa >= isaAVX2
	gemmAVX512 = isa >= isaAVX512
)

// ISA names the kernel set in use: "go", "avx2", "avx512" or "avx512vnni".
// Which kernels each level changes:
//
//   - avx2: every product has AVX2+FMA assembly; integer dots by VPMADDUBSW;
//     interleaved blocks (Q8_0, Q5_0, Q4_0, IQ4_NL, int4-a8) take 8-row ×
//     1-4-token tiles (Q8_0 and Q5_0 1-8), K-quant batches one-row tiles.
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
func runnable(l isaLevel) bool { return l <= hostISA }

// setISA switches the kernel set (tests and benchmarks compare the levels).
func setISA(l isaLevel) {
	isa, useAsm, gemmAVX512 = l, l >= isaAVX2, l >= isaAVX512
}
