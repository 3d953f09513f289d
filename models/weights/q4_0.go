package weights

import "chat/models/gguf"

// Q4_0: blocks of 32 4-bit values (q-8) with an f16 scale (block_q4_0),
// interleaved at load (il.go).
func init() { registerInterleaved(gguf.TypeQ4_0) }
