package safetensors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	in := map[string]Tensor{
		"a.lora_A.weight": F32([]int{2, 3}, []float32{1, 2, 3, 4, 5, -6.5}),
		"b":               {DType: "F16", Shape: []int{2}, Data: []byte{0x00, 0x3c, 0x00, 0xc0}}, // 1, -2
		"empty":           F32([]int{0, 4}, nil),
	}
	var buf bytes.Buffer
	if err := Write(&buf, in, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" || len(f.Tensors) != 3 {
		t.Fatalf("%+v", f)
	}
	a, err := f.Tensors["a.lora_A.weight"].Float32()
	if err != nil || len(a) != 6 || a[5] != -6.5 || f.Tensors["a.lora_A.weight"].Shape[1] != 3 {
		t.Fatalf("a = %v %v", a, err)
	}
	b, err := f.Tensors["b"].Float32()
	if err != nil || b[0] != 1 || b[1] != -2 {
		t.Fatalf("b = %v %v", b, err)
	}
}

func TestBadFiles(t *testing.T) {
	header := func(h string) []byte {
		b := make([]byte, 8, 8+len(h)+8)
		binary.LittleEndian.PutUint64(b, uint64(len(h)))
		return append(append(b, h...), make([]byte, 8)...)
	}
	for name, b := range map[string][]byte{
		"short":         {1, 2},
		"huge header":   {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		"not json":      header("{nope"),
		"bad dtype":     header(`{"x":{"dtype":"Q9","shape":[2],"data_offsets":[0,8]}}`),
		"past the end":  header(`{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`),
		"wrong size":    header(`{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`),
		"negative dim":  header(`{"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`),
		"huge shape":    header(`{"x":{"dtype":"F32","shape":[2147483647,2147483647,4],"data_offsets":[0,8]}}`),
		"offsets order": header(`{"x":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}}`),
		"bad metadata":  header(`{"__metadata__":{"a":[1]}}`),
	} {
		if _, err := Parse(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestEmptyTensor: a tensor with a zero dimension has no values, whatever
// its other dimensions; [288, 0] in a file of 8 data bytes was refused as
// "larger than the file".
func TestEmptyTensor(t *testing.T) {
	h := `{"x":{"dtype":"F32","shape":[288,0],"data_offsets":[0,0]}}`
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	b = append(append(b, h...), make([]byte, 8)...)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if x := f.Tensors["x"]; x.Elements() != 0 || len(x.Data) != 0 {
		t.Errorf("%d elements, %d bytes", x.Elements(), len(x.Data))
	}
}

func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, map[string]Tensor{"w": F32([]int{2, 2}, []float32{1, 2, 3, 4})}, nil)
	f.Add(buf.Bytes())
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		for _, tn := range file.Tensors {
			tn.Float32()
		}
	})
}

// TestFloat32RefusesFirst: a tensor of a non-float dtype is refused before
// its float32 copy is made.
func TestFloat32RefusesFirst(t *testing.T) {
	tn := Tensor{DType: "I64", Shape: []int{1 << 20}, Data: make([]byte, 8<<20)}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v, err := tn.Float32()
	runtime.ReadMemStats(&after)
	if err == nil || v != nil {
		t.Fatalf("Float32 of I64 = %d values, %v", len(v), err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Errorf("refusing an I64 tensor of 8 MB allocated %d KB", grew>>10)
	}
}

// sparse writes a file of header h followed by size data bytes, a hole.
func sparse(t *testing.T, h string, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.safetensors")
	fd, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	binary.Write(fd, binary.LittleEndian, uint64(len(h)))
	fd.WriteString(h)
	if err := fd.Truncate(8 + int64(len(h)) + size); err != nil {
		t.Skipf("cannot make a sparse file: %v", err)
	}
	return path
}

// TestOpenMaps: Open maps the file instead of reading it, so a sparse file
// declaring 64 MB takes no memory until its tensors are copied out, and a
// header's ranges are checked against the file's real size.
func TestOpenMaps(t *testing.T) {
	const n = 16 << 20
	path := sparse(t, fmt.Sprintf(`{"w":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}}`, n, 4*n), 4*n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f, err := Open(path)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if w := f.Tensors["w"]; len(w.Data) != 4*n || w.Elements() != n {
		t.Errorf("w has %d bytes, %d values", len(w.Data), w.Elements())
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("opening a sparse file of 64 MB allocated %d KB", grew>>10)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}

	// The header declares 64 MB; the file holds 4 bytes of data.
	path = sparse(t, fmt.Sprintf(`{"w":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}}`, n, 4*n), 4)
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "outside the 4 data bytes") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Open of a truncated file = %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.safetensors")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("Open of an empty file = %v", err)
	}
}

// TestShapeWraps: a shape whose product is 2⁶⁴ (0 in uint64) in a sparse
// file of 16 GB, more than the product before the last dimension, is
// refused, not read as an empty tensor of that shape.
func TestShapeWraps(t *testing.T) {
	path := sparse(t, `{"w":{"dtype":"F32","shape":[131072,131072,1073741824],"data_offsets":[0,0]}}`, 1<<34)
	f, err := Open(path)
	if err == nil {
		f.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "larger than the file") {
		t.Errorf("Open = %v, want the shape refused", err)
	}
}

// TestErrorsAreShort: the header's names, dtypes and lists in an error are
// cut, so a hostile header gives one short line.
func TestErrorsAreShort(t *testing.T) {
	ones := strings.TrimSuffix(strings.Repeat("1,", 1<<20), ",")
	for name, h := range map[string]string{
		"long name":    `{"` + strings.Repeat("n", 1<<20) + `":{"dtype":"Q9","shape":[2],"data_offsets":[0,8]}}`,
		"long dtype":   `{"x":{"dtype":"` + strings.Repeat(`d\u001b`, 1<<18) + `","shape":[2],"data_offsets":[0,8]}}`,
		"many offsets": `{"x":{"dtype":"F32","shape":[2],"data_offsets":[` + ones + `]}}`,
		"many dims":    `{"x":{"dtype":"F32","shape":[` + ones + `],"data_offsets":[0,8]}}`,
		"huge dims":    `{"x":{"dtype":"F32","shape":[` + strings.Repeat("2147483647,", 40) + `1],"data_offsets":[0,8]}}`,
		"wrong size":   `{"x":{"dtype":"F32","shape":[` + strings.Repeat("1,", 60) + `3],"data_offsets":[0,8]}}`,
	} {
		b := make([]byte, 8, 8+len(h)+8)
		binary.LittleEndian.PutUint64(b, uint64(len(h)))
		b = append(append(b, h...), make([]byte, 8)...)
		_, err := Parse(b)
		if err == nil || len(err.Error()) > 300 || strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("%s: error of %d bytes, want one short line: %.300v", name, len(fmt.Sprint(err)), err)
		}
	}
}
