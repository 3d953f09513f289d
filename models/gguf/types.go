package gguf

import (
	"fmt"
	"math/bits"
)

// Type is a ggml tensor element type, numbered as in ggml.h (enum ggml_type).
type Type uint32

// The ggml tensor types. Numbers follow ggml.h; gaps are types ggml removed.
const (
	TypeF32     Type = 0
	TypeF16     Type = 1
	TypeQ4_0    Type = 2
	TypeQ4_1    Type = 3
	TypeQ5_0    Type = 6
	TypeQ5_1    Type = 7
	TypeQ8_0    Type = 8
	TypeQ8_1    Type = 9
	TypeQ2_K    Type = 10
	TypeQ3_K    Type = 11
	TypeQ4_K    Type = 12
	TypeQ5_K    Type = 13
	TypeQ6_K    Type = 14
	TypeQ8_K    Type = 15
	TypeIQ2_XXS Type = 16
	TypeIQ2_XS  Type = 17
	TypeIQ3_XXS Type = 18
	TypeIQ1_S   Type = 19
	TypeIQ4_NL  Type = 20
	TypeIQ3_S   Type = 21
	TypeIQ2_S   Type = 22
	TypeIQ4_XS  Type = 23
	TypeI8      Type = 24
	TypeI16     Type = 25
	TypeI32     Type = 26
	TypeI64     Type = 27
	TypeF64     Type = 28
	TypeIQ1_M   Type = 29
	TypeBF16    Type = 30
	TypeTQ1_0   Type = 34
	TypeTQ2_0   Type = 35
	TypeMXFP4   Type = 39
)

// QK_K is the super-block size of the k-quants (ggml-common.h).
const QK_K = 256

type typeTraits struct {
	name       string
	blockSize  int // elements per block
	blockBytes int // bytes per block
}

// traits holds the block layout of every type a GGUF file may name, from
// ggml-common.h's block_* structs, so any file's tensor sizes can be checked
// even when its type cannot be dequantised.
var traits = map[Type]typeTraits{
	TypeF32:     {"f32", 1, 4},
	TypeF16:     {"f16", 1, 2},
	TypeQ4_0:    {"q4_0", 32, 2 + 16},
	TypeQ4_1:    {"q4_1", 32, 2 + 2 + 16},
	TypeQ5_0:    {"q5_0", 32, 2 + 4 + 16},
	TypeQ5_1:    {"q5_1", 32, 2 + 2 + 4 + 16},
	TypeQ8_0:    {"q8_0", 32, 2 + 32},
	TypeQ8_1:    {"q8_1", 32, 2 + 2 + 32},
	TypeQ2_K:    {"q2_k", QK_K, QK_K/16 + QK_K/4 + 2 + 2},
	TypeQ3_K:    {"q3_k", QK_K, QK_K/8 + QK_K/4 + 12 + 2},
	TypeQ4_K:    {"q4_k", QK_K, 2 + 2 + 12 + QK_K/2},
	TypeQ5_K:    {"q5_k", QK_K, 2 + 2 + 12 + QK_K/8 + QK_K/2},
	TypeQ6_K:    {"q6_k", QK_K, QK_K/2 + QK_K/4 + QK_K/16 + 2},
	TypeQ8_K:    {"q8_k", QK_K, 4 + QK_K + QK_K/16*2},
	TypeIQ2_XXS: {"iq2_xxs", QK_K, 2 + QK_K/4},
	TypeIQ2_XS:  {"iq2_xs", QK_K, 2 + QK_K/4 + QK_K/32},
	TypeIQ3_XXS: {"iq3_xxs", QK_K, 2 + 3*QK_K/8},
	TypeIQ1_S:   {"iq1_s", QK_K, 2 + QK_K/8 + QK_K/16},
	TypeIQ4_NL:  {"iq4_nl", 32, 2 + 16},
	TypeIQ3_S:   {"iq3_s", QK_K, 2 + QK_K/4 + QK_K/32 + QK_K/8 + QK_K/64},
	TypeIQ2_S:   {"iq2_s", QK_K, 2 + QK_K/4 + QK_K/16},
	TypeIQ4_XS:  {"iq4_xs", QK_K, 2 + 2 + QK_K/64 + QK_K/2},
	TypeI8:      {"i8", 1, 1},
	TypeI16:     {"i16", 1, 2},
	TypeI32:     {"i32", 1, 4},
	TypeI64:     {"i64", 1, 8},
	TypeF64:     {"f64", 1, 8},
	TypeIQ1_M:   {"iq1_m", QK_K, QK_K/8 + QK_K/16 + QK_K/32},
	TypeBF16:    {"bf16", 1, 2},
	TypeTQ1_0:   {"tq1_0", QK_K, (QK_K-4*QK_K/64)/5 + QK_K/64 + 2},
	TypeTQ2_0:   {"tq2_0", QK_K, QK_K/4 + 2},
	TypeMXFP4:   {"mxfp4", 32, 1 + 16},
}

// Known reports whether t is a type whose block layout this package knows.
func (t Type) Known() bool { _, ok := traits[t]; return ok }

// String is ggml's lower-case type name ("f32", "q8_0", "q4_k").
func (t Type) String() string {
	if tr, ok := traits[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements one block holds (1 for plain types).
func (t Type) BlockSize() int { return traits[t].blockSize }

// BlockBytes is the size in bytes of one block.
func (t Type) BlockBytes() int { return traits[t].blockBytes }

// RowBytes is the number of bytes n elements of type t take. n must be a
// multiple of the block size and the result must fit an int64.
func (t Type) RowBytes(n int64) (int64, error) {
	tr, ok := traits[t]
	if !ok {
		return 0, fmt.Errorf("gguf: unknown tensor type %d", uint32(t))
	}
	if n < 0 || n%int64(tr.blockSize) != 0 {
		return 0, fmt.Errorf("gguf: %d elements is not a whole number of %s blocks of %d", n, tr.name, tr.blockSize)
	}
	hi, lo := bits.Mul64(uint64(n/int64(tr.blockSize)), uint64(tr.blockBytes))
	if hi != 0 || lo > 1<<62 {
		return 0, fmt.Errorf("gguf: %d %s elements overflow the size range", n, tr.name)
	}
	return int64(lo), nil
}
