package gguf

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"strings"
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

// FuzzQuantize quantises arbitrary float32s (the input read little-endian,
// zero-padded to one super-block of 256) to the block type which picks:
// Quantize must return bytes or an error and never panic; NaN and Inf are
// always an error, values too large for the format the only other one; and
// what it accepts dequantises to finite values.
func FuzzQuantize(f *testing.F) {
	f.Add(byte(0), floatBytes([]float32{1, -2, 3.5}))
	f.Add(byte(3), floatBytes([]float32{float32(math.NaN()), 1}))
	f.Add(byte(6), floatBytes([]float32{1e-40, 3e38, -1e7, 0.5}))
	f.Add(byte(9), floatBytes([]float32{65504, -65504, 1e-15, 2e-15}))
	types := slices.Sorted(maps.Keys(blockQuantizers))
	f.Fuzz(func(t *testing.T, which byte, data []byte) {
		typ := types[int(which)%len(types)]
		n := min(len(data)/4, QK_K)
		x := make([]float32, QK_K)
		finite := true
		for i := range n {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			finite = finite && !math.IsNaN(float64(x[i])) && !math.IsInf(float64(x[i]), 0)
		}
		q, err := Quantize(typ, x)
		switch {
		case !finite && err == nil:
			t.Fatalf("%s: non-finite input accepted", typ)
		case err != nil && finite && !strings.Contains(err.Error(), "values up to"):
			t.Fatalf("%s: %v", typ, err)
		case err != nil:
			return
		}
		y := make([]float32, len(x))
		if err := Dequantize(typ, q, y); err != nil {
			t.Fatal(err)
		}
		for i, v := range y {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%s: x[%d] = %v dequantised to %v", typ, i, x[i], v)
			}
		}
	})
}
