package gguf

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sampleMeta() []KV {
	return []KV{
		{"general.architecture", String, "llama"},
		{"u8", Uint8, uint8(200)},
		{"i8", Int8, int8(-100)},
		{"u16", Uint16, uint16(60000)},
		{"i16", Int16, int16(-30000)},
		{"u32", Uint32, uint32(4000000000)},
		{"i32", Int32, int32(-2000000000)},
		{"f32", Float32, float32(1.5)},
		{"bool", Bool, true},
		{"str", String, "héllo ▁"},
		{"u64", Uint64, uint64(1) << 63},
		{"i64", Int64, int64(-1) << 62},
		{"f64", Float64, math.Pi},
		{"arr.str", Array, ArrayValue{String, []string{"a", "", "▁b"}}},
		{"arr.f32", Array, ArrayValue{Float32, []float32{1, -2, 0.25}}},
		{"arr.i32", Array, ArrayValue{Int32, []int32{1, 3, -6}}},
		{"arr.u8", Array, ArrayValue{Uint8, []uint8{}}},
		{"arr.bool", Array, ArrayValue{Bool, []bool{true, false}}},
		{"arr.f64", Array, ArrayValue{Float64, []float64{0.5}}},
		{"arr.nested", Array, ArrayValue{Array, []ArrayValue{
			{Int64, []int64{1, 2}},
			{String, []string{"x"}},
			{Array, []ArrayValue{{Uint16, []uint16{7}}}},
		}}},
		{"general.alignment", Uint32, uint32(64)},
	}
}

func sampleTensors() []WriteTensor {
	r := rand.New(rand.NewPCG(1, 2))
	data := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	return []WriteTensor{
		{Name: "a.f32", Dims: []int64{3, 5}, Type: TypeF32, Data: data(15)},
		{Name: "b.f16", Dims: []int64{7}, Type: TypeF16, Data: data(7)},
		{Name: "c.q8_0", Dims: []int64{64, 3}, Type: TypeQ8_0, Data: data(192)},
		{Name: "d.scalar", Dims: []int64{}, Type: TypeF32, Data: data(1)},
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	meta, tensors := sampleMeta(), sampleTensors()
	path := filepath.Join(t.TempDir(), "rt.gguf")
	var buf bytes.Buffer
	if err := Write(&buf, meta, tensors); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 || f.Alignment != 64 || f.DataOffset%64 != 0 {
		t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	if !reflect.DeepEqual(f.KV, meta) {
		t.Errorf("metadata differs:\n got %#v\nwant %#v", f.KV, meta)
	}
	if u, ok := f.Uint("u64"); !ok || u != 1<<63 {
		t.Error("Uint u64")
	}
	if i, ok := f.Int("i8"); !ok || i != -100 {
		t.Error("Int i8")
	}
	if _, ok := f.Uint("i8"); ok {
		t.Error("Uint of a negative value")
	}
	if v, ok := f.Ints("arr.i32"); !ok || !reflect.DeepEqual(v, []int{1, 3, -6}) {
		t.Error("Ints", v)
	}
	if v, ok := f.Float32s("arr.i32"); !ok || v[2] != -6 {
		t.Error("Float32s of ints", v)
	}
	if b, ok := f.Bool("bool"); !ok || !b {
		t.Error("Bool")
	}
	for _, wt := range tensors {
		ti, ok := f.Tensor(wt.Name)
		if !ok || ti.Type != wt.Type || !reflect.DeepEqual(ti.Dims, wt.Dims) || ti.Offset%64 != 0 {
			t.Fatalf("tensor %s: %+v", wt.Name, ti)
		}
		got, err := f.TensorFloat32(wt.Name)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range wt.Data {
			var tol float64
			switch wt.Type {
			case TypeF16:
				tol = math.Abs(float64(want)) / 1024
			case TypeQ8_0:
				tol = 0.03 // half a step of max|x|/127 for |x| < 4
			}
			if d := math.Abs(float64(got[i] - want)); d > tol {
				t.Errorf("%s[%d] = %v, want %v", wt.Name, i, got[i], want)
			}
		}
	}
}

func TestWriteErrors(t *testing.T) {
	var b bytes.Buffer
	bad := [][]WriteTensor{
		{{Name: "x", Dims: []int64{31}, Type: TypeQ8_0, Data: make([]float32, 31)}},
		{{Name: "x", Dims: []int64{4}, Type: TypeF32, Data: make([]float32, 3)}},
		{{Name: "x", Dims: []int64{32}, Type: TypeQ4_K, Data: make([]float32, 32)}},
		{{Name: "x", Dims: []int64{1}, Type: TypeF32, Data: []float32{1}}, {Name: "x", Dims: []int64{1}, Type: TypeF32, Data: []float32{1}}},
	}
	for i, ts := range bad {
		if err := Write(&b, nil, ts); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
	if err := Write(&b, []KV{{"k", Uint32, "not a number"}}, nil); err == nil {
		t.Error("mistyped value written")
	}
}

func TestQuantizeQ8_0Reference(t *testing.T) {
	x := make([]float32, 32)
	for i := range x {
		x[i] = float32(i-16) * 0.37
	}
	x[5] = 0.5 * (16 * 0.37 / 127) // a value on a rounding boundary region
	b, err := Quantize(TypeQ8_0, x)
	if err != nil {
		t.Fatal(err)
	}
	amax := float32(16 * 0.37)
	d := amax / 127
	id := 1 / d
	if got := F16ToF32(uint16(b[0]) | uint16(b[1])<<8); got != F16ToF32(F32ToF16(d)) {
		t.Errorf("scale %v", got)
	}
	for i, v := range x {
		want := int8(math.Round(float64(float32(v * id))))
		if int8(b[2+i]) != want {
			t.Errorf("q[%d] = %d, want %d", i, int8(b[2+i]), want)
		}
	}
	if int8(b[2]) != -127 {
		t.Errorf("the largest magnitude should map to -127, got %d", int8(b[2]))
	}
	zero, _ := Quantize(TypeQ8_0, make([]float32, 32))
	for _, c := range zero {
		if c != 0 {
			t.Fatal("all-zero block should encode as zeros")
		}
	}
}

// TestWriterPieces: a Writer given the tensors' bytes in pieces of any size,
// across tensor boundaries, writes Write's file; it refuses bytes beyond the
// last tensor, and Close refuses a tensor left short.
func TestWriterPieces(t *testing.T) {
	meta, tensors := sampleMeta(), sampleTensors()
	var want bytes.Buffer
	if err := Write(&want, meta, tensors); err != nil {
		t.Fatal(err)
	}
	infos := make([]TensorInfo, len(tensors))
	var data []byte
	for i, wt := range tensors {
		infos[i] = TensorInfo{Name: wt.Name, Dims: wt.Dims, Type: wt.Type}
		b, err := Quantize(wt.Type, wt.Data)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b...)
	}
	for _, piece := range []int{1, 7, 100, len(data)} {
		var got bytes.Buffer
		w, err := NewWriter(&got, meta, infos)
		if err != nil {
			t.Fatal(err)
		}
		for rest := data; len(rest) > 0; {
			n := min(piece, len(rest))
			if _, err := w.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if _, err := w.Write([]byte{0}); err == nil {
			t.Errorf("pieces of %d: a byte beyond the last tensor written", piece)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("pieces of %d: the file differs from Write's", piece)
		}
	}
	w, err := NewWriter(io.Discard, meta, infos)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data[:len(data)-1]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "d.scalar") {
		t.Errorf("Close with a byte missing: %v, want the short tensor named", err)
	}
}
