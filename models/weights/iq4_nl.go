package weights

import "chat/models/gguf"

// IQ4_NL: blocks of 32 4-bit indices into ggml's 16 non-linear levels
// (kvalues_iq4nl) with an f16 scale (block_iq4_nl), which llama.cpp's IQ4
// mixes use for rows whose length is not a multiple of 256. Its values
// d·level are Q8_0 values and ggml multiplies it as Q8_0
// (ggml_vec_dot_iq4_nl_q8_0). It is interleaved at load (il.go) with its
// nibbles as they are, 18 bytes a block as in the file, and the kernels
// look the levels up (kernels.IL4NL): the bits of Q8_0's kernels on the
// widened values, for any batch.
func init() { registerInterleaved(gguf.TypeIQ4_NL) }
