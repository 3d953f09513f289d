package weights

import "chat/models/gguf"

// Q5_0: blocks of 32 5-bit values (q-16) with an f16 scale (block_q5_0),
// which llama.cpp's K-quant mixes use for rows whose length is not a
// multiple of 256. Its values d·(q-16) are Q8_0 values, so it is unpacked at
// load into the interleaved int8 layout (il.go) and multiplied as Q8_0.
func init() { registerInterleaved(gguf.TypeQ5_0) }
