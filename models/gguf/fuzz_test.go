package gguf

import (
	"bytes"
	"testing"
)

// FuzzOpen feeds arbitrary bytes to the header parser: it must return a File
// or an error, never panic, hang or allocate beyond the input's size. The
// seeds stay small (the largest is about 1 KB) so each input, and the
// minimisation of a new one, is cheap.
func FuzzOpen(f *testing.F) {
	var b bytes.Buffer
	Write(&b, sampleMeta(), sampleTensors())
	f.Add(b.Bytes())
	// The metadata of issue 16's hostile file: block_count 16777216 with one
	// small tensor (the check against the tensors is the loader's).
	b.Reset()
	Write(&b, []KV{{"general.architecture", String, "llama"}, {"llama.block_count", Uint32, uint32(1 << 24)},
		{"general.name", String, "\x1b]0;title\x07\x9b2J"}},
		[]WriteTensor{{Name: "blk.0.attn_norm.weight", Dims: []int64{4}, Type: TypeF32, Data: []float32{1, 2, 3, 4}}})
	f.Add(b.Bytes())
	f.Add([]byte("GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add(header(3, 0, 1).str("k").u32(uint32(Array)).u32(uint32(Array)).u64(1).u32(uint32(String)).u64(1).str("x").Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		for i := range file.Tensors {
			ti := &file.Tensors[i]
			raw, err := file.TensorData(ti)
			if err != nil || int64(len(raw)) != ti.Size {
				t.Fatalf("tensor %q: %v", ti.Name, err)
			}
			if CanDequantize(ti.Type) && ti.Elements() < 1<<16 {
				if _, err := file.TensorFloat32(ti.Name); err != nil {
					t.Fatalf("tensor %q: %v", ti.Name, err)
				}
			}
		}
	})
}
