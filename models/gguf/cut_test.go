package gguf

import (
	"bytes"
	"strings"
	"testing"

	"chat/models/testmodels"
)

var hostileName = "\n" + testmodels.HostileName(1<<20) // a newline too: GGUF strings allow one

func oneShortLine(t *testing.T, err error) { testmodels.OneShortLine(t, err, 300) }

// A tensor name in TensorFloat32's errors is quoted and cut.
func TestTensorFloat32HostileName(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, nil, []WriteTensor{{Name: "w", Dims: []int64{4}, Type: TypeF32, Data: make([]float32, 4)}}); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.TensorFloat32(hostileName)
	if err == nil || !strings.Contains(err.Error(), "no tensor") {
		t.Fatalf("TensorFloat32 = %v, want no tensor", err)
	}
	oneShortLine(t, err)
}

// Write's errors quote and cut tensor names and metadata keys, which a
// converter takes from the checkpoint it reads.
func TestWriteHostileNames(t *testing.T) {
	cases := []struct {
		name, want string
		meta       []KV
		tensors    []WriteTensor
	}{
		{"duplicate key", "duplicate metadata key", []KV{{Key: hostileName, Type: Uint32, Value: uint32(1)}, {Key: hostileName, Type: Uint32, Value: uint32(1)}}, nil},
		{"bad value", "metadata", []KV{{Key: hostileName, Type: Uint32, Value: "x"}}, nil},
		{"duplicate tensor", "duplicate tensor name", nil, []WriteTensor{{Name: hostileName, Dims: []int64{1}, Type: TypeF32, Data: []float32{1}}, {Name: hostileName, Dims: []int64{1}, Type: TypeF32, Data: []float32{1}}}},
		{"dimensions", "dimensions", nil, []WriteTensor{{Name: hostileName, Dims: make([]int64, MaxDims+1), Type: TypeF32}}},
		{"negative", "negative dimension", nil, []WriteTensor{{Name: hostileName, Dims: []int64{-1}, Type: TypeF32}}},
		{"row length", "whole number of", nil, []WriteTensor{{Name: hostileName, Dims: []int64{3}, Type: TypeQ8_0}}},
		{"values", "values for", nil, []WriteTensor{{Name: hostileName, Dims: []int64{4}, Type: TypeF32, Data: []float32{1}}}},
		{"raw bytes", "bytes of data", nil, []WriteTensor{{Name: hostileName, Dims: []int64{4}, Type: TypeF32, Raw: []byte{1}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(&bytes.Buffer{}, tc.meta, tc.tensors)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Write = %v, want %q", err, tc.want)
			}
			oneShortLine(t, err)
		})
	}
}
