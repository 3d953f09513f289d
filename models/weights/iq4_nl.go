package weights

import "chat/models/gguf"

// IQ4_NL: blocks of 32 4-bit indices into ggml's 16 non-linear levels
// (kvalues_iq4nl) with an f16 scale (block_iq4_nl), which llama.cpp's IQ4
// mixes use for rows whose length is not a multiple of 256. Its values
// d·level are Q8_0 values and ggml multiplies it as Q8_0
// (ggml_vec_dot_iq4_nl_q8_0), so it is unpacked at load into the
// interleaved int8 layout (il.go) and multiplied as Q8_0: the same bits as
// Q8_0's kernels for any batch, at 34 bytes a block against the file's 18.
// (A nibble-lookup interleaved kind would keep the file's size; IL4 holds
// Q4_0's evenly spaced values, not these.)
func init() { registerInterleaved(gguf.TypeIQ4_NL) }
