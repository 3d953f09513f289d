package modeltest

import (
	"encoding/binary"
	"math/rand/v2"

	"chat/models/gguf"
)

// RandomBlocks returns n values' worth of random GGUF blocks of typ
// (Q4_0, Q5_0, Q4_1, Q5_1, Q4_K, Q5_K, Q6_K, IQ4_NL or IQ4_XS) whose f16 scales are small and finite,
// so products over them are well conditioned.
func RandomBlocks(r *rand.Rand, typ gguf.Type, n int) []byte {
	bs, bb := typ.BlockSize(), typ.BlockBytes()
	out := make([]byte, n/bs*bb)
	for i := range out {
		out[i] = byte(r.Uint32())
	}
	f16 := func(b []byte, v float32) { binary.LittleEndian.PutUint16(b, gguf.F32ToF16(v)) }
	for b := 0; b < n/bs; b++ {
		blk := out[b*bb : (b+1)*bb]
		d := 0.002 + 0.004*r.Float32()
		switch typ {
		case gguf.TypeQ4_0:
			f16(blk, d*8)
		case gguf.TypeQ5_0:
			f16(blk, d*4)
		case gguf.TypeQ4_1: // d, then a min of about -8d
			f16(blk, d*8)
			f16(blk[2:], -d*64*r.Float32())
		case gguf.TypeQ5_1:
			f16(blk, d*4)
			f16(blk[2:], -d*64*r.Float32())
		case gguf.TypeQ4_K, gguf.TypeQ5_K: // d, dmin, then 6-bit scales
			f16(blk, d)
			f16(blk[2:], d)
		case gguf.TypeQ6_K: // ql, qh, int8 scales, d last
			f16(blk[bb-2:], d/4)
		case gguf.TypeQ2_K: // 4-bit scales and mins, qs, then d, dmin
			f16(blk[80:], d)
			f16(blk[82:], d)
		case gguf.TypeQ3_K: // hmask, qs, 6-bit scales ±32, d last
			f16(blk[bb-2:], d/4)
		case gguf.TypeIQ4_NL: // levels up to ±127
			f16(blk, d/16)
		case gguf.TypeIQ4_XS: // levels up to ±127, scales ls-32 up to ±32
			f16(blk, d/512)
		}
	}
	return out
}
