package kvcache

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"chat/models/testmodels"
)

// Issue 16: KV files whose header claims the most the format allows (2^24
// positions, a 4 KB identity, layouts of 2^32-1) over a few bytes end with
// one error, fast and in little memory, and leave nothing allocated.
func TestHostileKVHeaders(t *testing.T) {
	p, _ := NewPool(Layout{Layers: 2, KDim: 4, VDim: 3}, 4, 16)
	header := func(identity string, dims [5]uint32, tokens int, goodCRC bool) []byte {
		var b bytes.Buffer
		u32 := func(v uint32) { binary.Write(&b, binary.LittleEndian, v) }
		b.WriteString(fileMagic)
		u32(FileVersion)
		u32(uint32(len(identity)))
		b.WriteString(identity)
		for _, d := range dims {
			u32(d)
		}
		for i := 0; i < tokens; i++ {
			u32(uint32(i))
		}
		if goodCRC {
			u32(crc32.Checksum(b.Bytes(), castagnoli))
		}
		return b.Bytes()
	}
	for name, data := range map[string][]byte{
		"2^24 positions":     header("m", [5]uint32{2, 4, 3, 4, 1 << 24}, 0, false),
		"huge layout":        header("m", [5]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), 8}, 8, true),
		"identity claim":     append([]byte(fileMagic), 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff),
		"escape in identity": header("m\x1b[2J\u009b", [5]uint32{2, 4, 3, 4, 8}, 8, true),
		"blocks missing":     header("m", [5]uint32{2, 4, 3, 4, 64}, 64, true),
	} {
		err := testmodels.Bounded(t, name, func() error {
			_, _, err := p.Import(bytes.NewReader(data), "m", 1<<24)
			return err
		})
		if err == nil || p.Used() != 0 {
			t.Errorf("%s: error %v, %d blocks in use", name, err, p.Used())
		}
	}
}
