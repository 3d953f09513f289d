package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"chat/models/testmodels"
)

func TestOpenStories260K(t *testing.T) {
	f, err := Open(testmodels.Path(t, "stories260K/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 || f.Alignment != 32 {
		t.Errorf("version %d alignment %d", f.Version, f.Alignment)
	}
	if s, _ := f.String("general.architecture"); s != "llama" {
		t.Errorf("architecture %q", s)
	}
	if n, ok := f.Uint("llama.embedding_length"); !ok || n != 64 {
		t.Errorf("embedding_length %d %v", n, ok)
	}
	if e, ok := f.Float("llama.attention.layer_norm_rms_epsilon"); !ok || float32(e) != 1e-5 {
		t.Errorf("eps %v %v", e, ok)
	}
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok || len(toks) != 512 || toks[1] != "<s>" {
		t.Fatalf("tokens: %d %v", len(toks), ok)
	}
	scores, ok := f.Float32s("tokenizer.ggml.scores")
	if !ok || len(scores) != 512 {
		t.Fatalf("scores %d", len(scores))
	}
	types, ok := f.Ints("tokenizer.ggml.token_type")
	if !ok || types[1] != 3 || types[3] != 6 {
		t.Fatalf("token types %v", types[:4])
	}
	if _, ok := f.Strings("general.name"); ok {
		t.Error("Strings on a string value should fail")
	}
	ti, ok := f.Tensor("blk.0.attn_k.weight")
	if !ok || ti.Type != TypeF32 || len(ti.Dims) != 2 || ti.Dims[0] != 64 || ti.Dims[1] != 32 {
		t.Fatalf("attn_k %+v", ti)
	}
	w, err := f.TensorFloat32("blk.0.attn_k.weight")
	if err != nil || len(w) != 64*32 {
		t.Fatal(err, len(w))
	}
	raw, _ := f.TensorData(ti)
	if w[5] != math.Float32frombits(binary.LittleEndian.Uint32(raw[20:])) {
		t.Error("f32 view differs from the raw bytes")
	}
}

// builder writes GGUF headers by hand for the corrupt-input tests.
type builder struct{ bytes.Buffer }

func (b *builder) u32(v uint32) *builder { binary.Write(b, binary.LittleEndian, v); return b }
func (b *builder) u64(v uint64) *builder { binary.Write(b, binary.LittleEndian, v); return b }
func (b *builder) str(s string) *builder { b.u64(uint64(len(s))); b.WriteString(s); return b }

func header(version uint32, nt, nkv uint64) *builder {
	b := &builder{}
	b.WriteString("GGUF")
	b.u32(version).u64(nt).u64(nkv)
	return b
}

func TestCorruptInputs(t *testing.T) {
	// A valid one-tensor file to truncate and mutate.
	var good bytes.Buffer
	err := Write(&good, []KV{{"general.architecture", String, "llama"}},
		[]WriteTensor{{Name: "w", Dims: []int64{32, 2}, Type: TypeF32, Data: make([]float32, 64)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(good.Bytes()); err != nil {
		t.Fatal(err)
	}
	tensorHeader := func(dims []uint64, typ uint32, off uint64) []byte {
		b := header(3, 1, 0)
		b.str("w").u32(uint32(len(dims)))
		for _, d := range dims {
			b.u64(d)
		}
		b.u32(typ).u64(off)
		for b.Len()%32 != 0 {
			b.WriteByte(0)
		}
		b.Write(make([]byte, 256))
		return b.Bytes()
	}
	badBool := append(header(3, 0, 1).str("k").u32(uint32(Bool)).Bytes(), 2)
	dup := header(3, 0, 2).str("k").u32(uint32(Uint8))
	dup.WriteByte(1)
	dup.str("k").u32(uint32(Uint8)).WriteByte(2)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"bad magic", []byte("GGUX\x03\x00\x00\x00"), "bad magic"},
		{"version 1", header(1, 0, 0).Bytes(), "unsupported version 1"},
		{"version 4", header(4, 0, 0).Bytes(), "unsupported version 4"},
		{"big-endian", header(3<<24, 0, 0).Bytes(), "big-endian"},
		{"truncated counts", []byte("GGUF\x03\x00\x00\x00\x00"), "truncated"},
		{"absurd kv count", header(3, 0, 1<<60).Bytes(), "cannot fit"},
		{"absurd tensor count", header(3, 1<<50, 0).Bytes(), "cannot fit"},
		{"absurd key length", append(header(3, 0, 1).u64(1<<62).Bytes(), make([]byte, 16)...), "exceeds"},
		{"unknown value type", header(3, 0, 1).str("k").u32(99).Bytes(), "unknown value type"},
		{"absurd array length", header(3, 0, 1).str("k").u32(uint32(Array)).u32(uint32(Uint32)).u64(1 << 61).Bytes(), "exceeds"},
		{"absurd string array", header(3, 0, 1).str("k").u32(uint32(Array)).u32(uint32(String)).u64(1 << 40).Bytes(), "exceeds"},
		{"unknown array type", header(3, 0, 1).str("k").u32(uint32(Array)).u32(77).u64(1).Bytes(), "unknown array element type"},
		{"truncated value", header(3, 0, 1).str("k").u32(uint32(Uint64)).u32(1).Bytes(), "unexpected end"},
		{"bad bool", badBool, "neither 0 nor 1"},
		{"duplicate key", dup.Bytes(), "duplicate metadata key"},
		{"bad alignment type", header(3, 0, 1).str("general.alignment").u32(uint32(Uint64)).u64(32).Bytes(), "want uint32"},
		{"bad alignment value", header(3, 0, 1).str("general.alignment").u32(uint32(Uint32)).u32(24).Bytes(), "power of two"},
		{"too many dims", tensorHeader([]uint64{1, 1, 1, 1, 1}, 0, 0), "dimensions"},
		{"unknown tensor type", tensorHeader([]uint64{4}, 5, 0), "unknown tensor type"},
		{"partial block", tensorHeader([]uint64{31}, uint32(TypeQ8_0), 0), "block size"},
		{"overflowing dims", tensorHeader([]uint64{1 << 40, 1 << 40}, 0, 0), "overflow"},
		{"misaligned offset", tensorHeader([]uint64{4}, 0, 4), "alignment"},
		{"data past EOF", tensorHeader([]uint64{1024}, 0, 0), "past the end"},
		{"overflowing offset", tensorHeader([]uint64{4}, 0, math.MaxInt64-31), "past the end"},
		{"huge offset", tensorHeader([]uint64{4}, 0, 1<<63+32), "overflows"},
		{"truncated tensor data", good.Bytes()[:good.Len()-200], "past the end"},
		{"truncated tensor info", good.Bytes()[:60], "unexpected end"},
	}
	for _, c := range cases {
		_, err := Parse(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// Every prefix of a valid file fails cleanly.
	for n := 0; n < good.Len(); n++ {
		if _, err := Parse(good.Bytes()[:n]); err == nil {
			t.Errorf("prefix of %d bytes parsed", n)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.gguf")); err == nil {
		t.Error("missing file opened")
	}
	p := filepath.Join(dir, "bad.gguf")
	os.WriteFile(p, []byte("GGUF\x02\x00\x00\x00garbage"), 0o644)
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), "bad.gguf") {
		t.Errorf("got %v", err)
	}
	os.WriteFile(p, []byte("GG"), 0o644)
	if _, err := Open(p); err == nil {
		t.Error("tiny file opened")
	}
}

func TestVersion2(t *testing.T) {
	b := header(2, 0, 1).str("general.name").u32(uint32(String)).str("v2")
	f, err := Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := f.String("general.name"); s != "v2" || f.Version != 2 {
		t.Errorf("got %q v%d", s, f.Version)
	}
}

// Issue 16: a huge sparse file (zeros) whose header claims as many
// entries or tensors as its size allows is refused without making room for
// them all first (700M entries in 10 GB once died out of memory): as many
// as the size allows are refused by the memory they would take before one
// is read, and a million, within it, by the second empty name.
func TestSparseCountsNotPreallocated(t *testing.T) {
	const size = 256 << 20
	for name, c := range map[string]struct {
		b    *builder
		want string
	}{
		"entries": {header(3, 0, size/12-8), "in memory"}, "tensors": {header(3, size/24-8, 0), "in memory"},
		"a million entries": {header(3, 0, 1<<20), "duplicate"}, "a million tensors": {header(3, 1<<20, 0), "duplicate"},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := openSparse(t, strings.ReplaceAll(name, " ", "-"), c.b, size)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
			t.Errorf("%s: allocated %d bytes", name, grew)
		}
	}
}

// Issue 16: strings and arrays a huge sparse file declares (as many as
// its size allows, all empty) are refused by the memory they would take,
// not read for minutes into tens of GB.
func TestSparseValuesBounded(t *testing.T) {
	for name, c := range map[string]struct {
		size int64
		b    *builder
	}{
		"strings": {600 << 20, header(3, 0, 1).str("a").u32(uint32(Array)).u32(uint32(String)).u64(70 << 20)},
		"arrays":  {300 << 20, header(3, 0, 1).str("a").u32(uint32(Array)).u32(uint32(Array)).u64(24 << 20)},
		"string":  {1100 << 20, header(3, 0, 1).str("a").u32(uint32(String)).u64(1050 << 20)},
	} {
		err := openSparse(t, name, c.b, c.size)
		if err == nil || !strings.Contains(err.Error(), "in memory") {
			t.Errorf("%s: %v, want the values refused by their memory", name, err)
		}
	}
}

// openSparse writes b's bytes as the start of a sparse file of size bytes
// (zeros after them) and opens it, failing the test if that hangs.
func openSparse(t *testing.T, name string, b *builder, size int64) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".gguf")
	fd, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fd.Write(b.Bytes())
	if err := fd.Truncate(size); err != nil {
		t.Skipf("cannot make a sparse file: %v", err)
	}
	fd.Close()
	return testmodels.Bounded(t, name, func() error {
		f, err := Open(path)
		if err == nil {
			f.Close()
		}
		return err
	})
}

// TestOpenLargeSparse opens a 1 GiB F32 tensor in a sparse file: Open reads
// only the header and the tensor comes back as a view of the mapping.
func TestOpenLargeSparse(t *testing.T) {
	const n = 1 << 28 // 1 GiB of float32
	b := header(3, 1, 0)
	b.str("big").u32(1).u64(n).u32(uint32(TypeF32)).u64(0)
	for b.Len()%32 != 0 {
		b.WriteByte(0)
	}
	path := filepath.Join(t.TempDir(), "big.gguf")
	fd, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fd.Write(b.Bytes())
	if err := fd.Truncate(int64(b.Len()) + 4*n); err != nil {
		t.Skipf("cannot make a sparse file: %v", err)
	}
	fd.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := f.TensorFloat32("big")
	runtime.ReadMemStats(&after)
	if err != nil || len(w) != n || w[n-1] != 0 {
		t.Fatalf("len %d err %v", len(w), err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("Open allocated %d bytes for a 1 GiB tensor", grew)
	}
	raw, _ := f.TensorData(&f.Tensors[0])
	if unsafe.Pointer(&raw[0]) != unsafe.Pointer(&w[0]) {
		t.Error("the F32 tensor was copied, not viewed")
	}
}

// A tensor of a type that cannot be dequantised is refused before its
// float32s are made: an IQ1_S tensor takes 20 times its size as float32.
func TestTensorFloat32RefusesBeforeAllocating(t *testing.T) {
	const rows = 4096
	var b bytes.Buffer
	err := Write(&b, nil, []WriteTensor{{Name: "iq1", Dims: []int64{QK_K, rows}, Type: TypeIQ1_S, Raw: make([]byte, rows*50)}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = f.TensorFloat32("iq1")
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("TensorFloat32 = %v, want IQ1_S refused", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Errorf("refusing a %d-byte IQ1_S tensor allocated %d bytes", rows*50, grew)
	}
}
