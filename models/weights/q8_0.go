package weights

import "chat/models/gguf"

// Q8_0: blocks of 32 int8 values with an f16 scale (block_q8_0),
// interleaved at load (il.go).
func init() { registerInterleaved(gguf.TypeQ8_0) }
