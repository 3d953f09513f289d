package weights

import "chat/models/gguf"

// Q4_1 and Q5_1: blocks of 32 unsigned 4- or 5-bit values q with an f16
// scale d and min m, value d·q + m (block_q4_1, block_q5_1); llama-quantize
// writes Q5_1 for the Q5_K tensors of a mix whose rows are not a multiple of
// 256. They are interleaved at load (il.go: kernels.IL4M with the file's
// nibbles, kernels.IL8M with the 5-bit values as bytes) and multiplied with
// Q8_0 activations, each block's min term taken from the token's exact block
// sum, as ggml multiplies them with Q8_1 (d_w·d_x·Σq·x + m_w·d_x·Σx).
func init() {
	registerInterleaved(gguf.TypeQ4_1)
	registerInterleaved(gguf.TypeQ5_1)
}
