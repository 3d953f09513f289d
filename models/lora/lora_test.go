package lora

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"chat/models"
	"chat/models/convert"
	"chat/models/course"
	"chat/models/gguf"
	"chat/models/hugepage"
	"chat/models/kvcache"
	"chat/models/llama"
	"chat/models/modeltest"
	"chat/models/safetensors"
	"chat/models/testmodels"
	"chat/models/weights"
)

const rank, alpha = 4, 8.0

// randomAdapter is a rank-4 update of every attention and feed-forward
// matrix of a course model (and of its output layer when it is not tied
// to the embedding), with alpha 8 (scale 2).
func randomAdapter(t *testing.T, m *course.Model, seed uint64) *Adapter {
	t.Helper()
	a, err := Random(m, rank, 0.05, seed)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Pairs {
		a.Pairs[i].Alpha = alpha
	}
	return a
}

func loadCourse(t *testing.T, file string) *course.Model {
	t.Helper()
	m, err := course.Load(testmodels.Path(t, file))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// logits runs ids through m and returns every position's logits.
func logits(t *testing.T, m models.Model, ids []int) []float32 {
	t.Helper()
	st := kvcache.NewState(m)
	out, err := st.Forward(ids, len(ids))
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), out...)
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

var prompt = []int{396, 397, 258, 379, 44, 390, 285, 258, 378, 427, 366, 301, 46, 324}

// TestRuntimeEqualsMerged: an adapter applied at run time (W·x +
// s·B·(A·x)) gives the merged model's logits (W + s·B·A) within 1e-5, and
// changes them; the base model is left as it was.
func TestRuntimeEqualsMerged(t *testing.T) {
	for _, file := range []string{"course/student.pt", "course/tiny-noqknorm.pt"} {
		m := loadCourse(t, file)
		ad := randomAdapter(t, m, 1)
		run, err := Apply(m, []*Adapter{ad})
		if err != nil {
			t.Fatal(err)
		}
		merged, err := Merge(m, []*Adapter{ad})
		if err != nil {
			t.Fatal(err)
		}
		base, lr, lm := logits(t, m, prompt), logits(t, run, prompt), logits(t, merged, prompt)
		t.Logf("%s: run-time vs merged %g, vs base %g", file, maxDiff(lr, lm), maxDiff(base, lr))
		if d := maxDiff(lr, lm); d > 1e-5 {
			t.Errorf("%s: run-time and merged logits differ by %g", file, d)
		}
		if d := maxDiff(base, lr); d < 1e-2 {
			t.Errorf("%s: the adapter changed the logits by only %g", file, d)
		}
		if d := maxDiff(base, logits(t, m, prompt)); d != 0 {
			t.Errorf("%s: applying changed the base model", file)
		}
	}
}

// writeBoth writes ad as a PEFT folder (course names) and as a llama.cpp
// GGUF adapter for the converted model (llama.cpp names, Q and K rows
// paired when that model is llama), with the same alpha.
func writeBoth(t *testing.T, m *course.Model, ad *Adapter, dir string) (peft, ggufPath string) {
	t.Helper()
	peft = filepath.Join(dir, "peft")
	if err := WritePEFT(peft, ad, alpha); err != nil {
		t.Fatal(err)
	}
	arch, err := convert.CourseArch(m.Config())
	if err != nil {
		t.Fatal(err)
	}
	g := &Adapter{}
	for _, p := range ad.Pairs {
		q := p
		q.Target = convert.GGUFName(p.Target)
		if arch == "llama" && isQK(q.Target) {
			q.B = weights.NewF32(convert.PairRows(p.B.Floats(), p.B.Cols(), m.Config().HeadDim), p.B.Rows(), p.B.Cols())
		}
		g.Pairs = append(g.Pairs, q)
	}
	ggufPath = filepath.Join(dir, "adapter.gguf")
	w, err := os.Create(ggufPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteGGUF(w, g, arch, alpha); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return peft, ggufPath
}

// TestPEFTAndGGUFAgree: the same update written as a PEFT folder and as a
// llama.cpp GGUF adapter gives the same logits, on the checkpoint and on
// the GGUF file chat convert makes of it (qwen3 for student.pt, llama with
// paired Q/K rows for tiny-noqknorm), and the files read back as written.
func TestPEFTAndGGUFAgree(t *testing.T) {
	for _, file := range []string{"course/student.pt", "course/tiny-noqknorm.pt"} {
		dir := t.TempDir()
		m := loadCourse(t, file)
		ad := randomAdapter(t, m, 2)
		peftDir, ggufFile := writeBoth(t, m, ad, dir)
		pa, err := Load(peftDir)
		if err != nil {
			t.Fatal(err)
		}
		ga, err := Load(ggufFile + ":1")
		if err != nil {
			t.Fatal(err)
		}
		if len(pa.Pairs) != len(ad.Pairs) || len(ga.Pairs) != len(ad.Pairs) || pa.Format != "peft" || ga.Format != "gguf" {
			t.Fatalf("%s: read %d / %d pairs of %d", file, len(pa.Pairs), len(ga.Pairs), len(ad.Pairs))
		}
		direct, _ := Apply(m, []*Adapter{ad})
		want := logits(t, direct, prompt)
		for _, a := range []*Adapter{pa, ga} {
			am, err := Apply(m, []*Adapter{a})
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(want, logits(t, am, prompt)); d != 0 {
				t.Errorf("%s: %s adapter on the checkpoint differs by %g", file, a.Format, d)
			}
		}

		// The converted GGUF model takes both too, identically.
		f, err := convert.FromCourse(m, "x")
		if err != nil {
			t.Fatal(err)
		}
		mix, _ := convert.ParseMix("f32")
		convert.SetTypes(f, mix)
		path := filepath.Join(dir, "model.gguf")
		w, _ := os.Create(path)
		if err := convert.Write(w, f, mix, nil); err != nil {
			t.Fatal(err)
		}
		w.Close()
		gm, err := llama.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		defer gm.Close()
		var got [][]float32
		for _, a := range []*Adapter{pa, ga} {
			am, err := Apply(gm, []*Adapter{a})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, logits(t, am, prompt))
		}
		if d := maxDiff(got[0], got[1]); d != 0 {
			t.Errorf("%s: on the GGUF model PEFT and GGUF adapters differ by %g", file, d)
		}
		t.Logf("%s: adapted GGUF vs adapted checkpoint %g", file, maxDiff(want, got[0]))
		if d := maxDiff(want, got[0]); d > 1e-4 {
			t.Errorf("%s: the adapted GGUF model's logits are %g from the adapted checkpoint's", file, d)
		}
	}
}

// TestSeveralAdapters: two adapters at once add their updates; scales
// multiply an adapter's update (scale 0 is the base model).
func TestSeveralAdapters(t *testing.T) {
	m := loadCourse(t, "course/tiny.pt")
	a1, a2 := randomAdapter(t, m, 3), randomAdapter(t, m, 4)
	both, err := Apply(m, []*Adapter{a1, a2})
	if err != nil {
		t.Fatal(err)
	}
	merged, _ := Merge(m, []*Adapter{a1, a2})
	if d := maxDiff(logits(t, both, prompt), logits(t, merged, prompt)); d > 1e-5 {
		t.Errorf("two adapters: run-time and merged differ by %g", d)
	}
	off := *a1
	off.Scale = 0
	zero, _ := Apply(m, []*Adapter{&off})
	if d := maxDiff(logits(t, zero, prompt), logits(t, m, prompt)); d != 0 {
		t.Errorf("scale 0 changed the logits by %g", d)
	}
}

// TestBadAdapters: a target the model lacks, a missing half, a PEFT folder
// without its config, a GGUF file that is not an adapter: one error each.
func TestBadAdapters(t *testing.T) {
	m := loadCourse(t, "course/tiny.pt")
	ad := randomAdapter(t, m, 5)
	ad.Pairs[0].Target = "blocks.9.attn.q_proj.weight"
	if _, err := Apply(m, []*Adapter{ad}); err == nil || !strings.Contains(err.Error(), "blocks.9") {
		t.Errorf("unknown target: %v", err)
	}
	dir := t.TempDir()
	// An adapter made for another model: its Q update has 5 rows, not whole
	// heads, and reordering them to the converted file's paired layout
	// panicked (slice bounds out of range) before the shape was checked.
	nq := loadCourse(t, "course/tiny-noqknorm.pt")
	d := nq.Config().Embed
	other := &Adapter{Pairs: []Pair{{Target: "blk.0.attn_q.weight", A: weights.NewF32(make([]float32, 2*d), 2, d), B: weights.NewF32(make([]float32, 10), 5, 2), Alpha: 1}}}
	var og bytes.Buffer
	if err := WriteGGUF(&og, other, "llama", 1); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "other.gguf"), og.Bytes(), 0o644)
	if oa, err := Load(filepath.Join(dir, "other.gguf")); err != nil {
		t.Fatal(err)
	} else if _, err := Apply(nq, []*Adapter{oa}); err == nil || !strings.Contains(err.Error(), "its update of \"blk.0.attn_q.weight\", [5][64], does not fit the [64][64] matrix of tiny-noqknorm.pt") {
		t.Errorf("an adapter for another model: %v", err)
	}
	// It was "lora: stat nope.gguf: no such file or directory".
	if _, err := Load(filepath.Join(dir, "nope.gguf") + ":0.5"); err == nil || !strings.HasSuffix(err.Error(), "nope.gguf: no such file or folder (an adapter is a PEFT folder or a llama.cpp GGUF LoRA file)") {
		t.Errorf("a missing adapter: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "adapter_config.json") {
		t.Errorf("empty folder: %v", err)
	}
	if _, err := Load(testmodels.Path(t, "stories260K/stories260K.gguf")); err == nil || !strings.Contains(err.Error(), "not an adapter") {
		t.Errorf("a model as adapter: %v", err)
	}
	// The file's strings in an error are cut: one short line (issue 16).
	for i, meta := range [][]gguf.KV{
		{{Key: "general.type", Type: gguf.String, Value: strings.Repeat("x", 1<<20)}},
		{{Key: "general.type", Type: gguf.String, Value: "adapter"}, {Key: "adapter.type", Type: gguf.String, Value: strings.Repeat("x", 1<<20)}},
		{{Key: "general.type", Type: gguf.String, Value: "adapter"}, {Key: "adapter.type", Type: gguf.String, Value: "lora"}},
	} {
		var b bytes.Buffer
		ts := []gguf.WriteTensor{{Name: strings.Repeat("t", 1<<20), Dims: []int64{4}, Type: gguf.TypeF32, Data: make([]float32, 4)}}
		if err := gguf.Write(&b, meta, ts); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("long%d.gguf", i))
		os.WriteFile(path, b.Bytes(), 0o644)
		if _, err := Load(path); err == nil || len(err.Error()) > 400 {
			t.Errorf("%s: error of %d bytes, want one short line", path, len(fmt.Sprint(err)))
		}
	}
	// A NaN or infinity in a matrix or alpha is named at load; it used to
	// load, and every logit of the model came out NaN.
	for i, c := range []struct {
		edit  func(*Adapter)
		alpha float64
		want  string
	}{
		{func(a *Adapter) { a.Pairs[1].A.Floats()[3] = float32(math.NaN()) }, alpha, "lora_a holds NaN (value 3)"},
		{func(a *Adapter) { a.Pairs[0].B.Floats()[0] = float32(math.Inf(-1)) }, alpha, "lora_b holds -Inf (value 0)"},
		{func(*Adapter) {}, math.Inf(1), "alpha is +Inf"}, // JSON has no infinity: a GGUF adapter
		{func(*Adapter) {}, 1e300, "alpha is 1e+300"},
	} {
		ad := randomAdapter(t, m, 7)
		c.edit(ad)
		path := filepath.Join(dir, fmt.Sprintf("nonfinite%d", i))
		var err error
		if math.IsInf(c.alpha, 0) {
			path += ".gguf"
			var b bytes.Buffer
			err = WriteGGUF(&b, ad, "llama", c.alpha)
			os.WriteFile(path, b.Bytes(), 0o644)
		} else {
			err = WritePEFT(path, ad, c.alpha)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.want, err)
		}
	}
	// A scale whose product with alpha/rank overflows float32 made every
	// logit NaN too.
	good := filepath.Join(dir, "nonfinite0")
	if err := WritePEFT(good, randomAdapter(t, m, 7), 1e30); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(good + ":1e20"); err == nil || !strings.Contains(err.Error(), "is +Inf as float32") {
		t.Errorf("scale 1e20, alpha 1e30: %v", err)
	}
	ad = randomAdapter(t, m, 6)
	peft := filepath.Join(dir, "p")
	if err := WritePEFT(peft, ad, alpha); err != nil {
		t.Fatal(err)
	}
	// A finite but absurd product (scale 1e30, alpha/rank 2) loaded, then
	// every reply ended in "no finite logit": one line at load names the
	// adapter and the scale. Scales people use, negative ones too, load.
	for _, sc := range []string{"1e30", "-1e12"} {
		_, err := Load(peft + ":" + sc)
		if err == nil || !strings.HasPrefix(err.Error(), "lora: p at scale "+fmt.Sprint(mustFloat(t, sc))+" could add up to") || strings.Contains(err.Error(), "\n") {
			t.Errorf("scale %s: %v", sc, err)
		}
	}
	for _, sc := range []string{"2", "-1", "0"} {
		if _, err := Load(peft + ":" + sc); err != nil {
			t.Errorf("scale %s: %v", sc, err)
		}
	}
	os.WriteFile(filepath.Join(peft, "adapter_config.json"), []byte(`{"peft_type":"LORA","r":4,"lora_alpha":8,"use_dora":true}`), 0o644)
	if _, err := Load(peft); err == nil || !strings.Contains(err.Error(), "DoRA") {
		t.Errorf("DoRA: %v", err)
	}
	// A FIFO as the weights is refused, not waited on (issue 16); the small
	// adapter_config.json may be a pipe, read when a writer feeds it.
	os.WriteFile(filepath.Join(peft, "adapter_config.json"), []byte(`{"peft_type":"LORA","r":4,"lora_alpha":8}`), 0o644)
	weights := filepath.Join(peft, "adapter_model.safetensors")
	os.Remove(weights)
	if err := syscall.Mkfifo(weights, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	err := testmodels.Bounded(t, "weights", func() error { _, err := Load(peft); return err })
	if err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("adapter_model.safetensors a FIFO: %v", err)
	}
	os.Remove(weights)
	if err := WritePEFT(peft, ad, alpha); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(peft, "adapter_config.json")
	text, _ := os.ReadFile(config)
	os.Remove(config)
	syscall.Mkfifo(config, 0o600)
	go func() {
		if f, err := os.OpenFile(config, os.O_WRONLY, 0); err == nil { // waits for Load to open it
			f.Write(text)
			f.Close()
		}
	}()
	if err := testmodels.Bounded(t, "config", func() error { _, err := Load(peft); return err }); err != nil {
		t.Errorf("adapter_config.json a FIFO with a writer: %v", err)
	}
}

// TestLlamaCppAdapter (CHAT_LLAMACPP=1): llama.cpp runs the converted
// student.pt with the GGUF adapter written here (its loader checks the
// names, shapes and metadata) and gives the greedy ids this app gives with
// the same adapter at run time.
func TestLlamaCppAdapter(t *testing.T) {
	testmodels.NeedLlamaCpp(t)
	for _, file := range []string{"course/student.pt", "course/tiny-noqknorm.pt", "course/tiny-untied.pt"} {
		dir := t.TempDir()
		m := loadCourse(t, file)
		ad := randomAdapter(t, m, 7)
		for i := range ad.Pairs { // a gentler update keeps the text readable
			ad.Pairs[i].Alpha = 1
		}
		_, ggufFile := writeBoth(t, m, ad, dir)
		f, _ := convert.FromCourse(m, "x")
		mix, _ := convert.ParseMix("f32")
		convert.SetTypes(f, mix)
		path := filepath.Join(dir, "model.gguf")
		w, _ := os.Create(path)
		if err := convert.Write(w, f, mix, nil); err != nil {
			t.Fatal(err)
		}
		w.Close()
		gm, err := llama.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		defer gm.Close()
		ga, err := Load(ggufFile + ":0.5")
		if err != nil {
			t.Fatal(err)
		}
		am, err := Apply(gm, []*Adapter{ga})
		if err != nil {
			t.Fatal(err)
		}
		res := testmodels.LlamaCpp(t, testmodels.LlamaCppRequest{Model: path, Lora: []any{ggufFile, 0.5}, Prompts: [][]int{prompt}, NGen: 32})
		want := modeltest.Greedy(t, am, prompt, len(res.Greedy[0]))
		if len(want) == 0 || !slicesEqual(res.Greedy[0], want) {
			t.Errorf("%s: llama.cpp with the adapter\n got %v\nwant %v", file, res.Greedy[0], want)
		}
		base := modeltest.Greedy(t, gm, prompt, len(want))
		if slicesEqual(base, want) {
			t.Errorf("%s: the adapter did not change the greedy ids", file)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// adapterMeta is what makes a GGUF file a LoRA adapter.
var adapterMeta = []gguf.KV{
	{Key: "general.type", Type: gguf.String, Value: "adapter"},
	{Key: "adapter.type", Type: gguf.String, Value: "lora"},
	{Key: "adapter.lora.alpha", Type: gguf.Float32, Value: float32(alpha)},
}

// A quantized adapter takes its float32 size in memory once (it was
// copied after dequantising: twice), and one whose matrices cannot fit in
// memory as float32 (a sparse file may declare any size) is refused in one
// line before anything is made.
func TestQuantizedAdapterMemory(t *testing.T) {
	const in, out, r = 1024, 512, 64
	ts := []gguf.WriteTensor{
		{Name: "blk.0.attn_q.weight.lora_a", Dims: []int64{in, r}, Type: gguf.TypeQ8_0, Data: make([]float32, in*r)},
		{Name: "blk.0.attn_q.weight.lora_b", Dims: []int64{r, out}, Type: gguf.TypeQ8_0, Data: make([]float32, r*out)},
	}
	var b bytes.Buffer
	if err := gguf.Write(&b, adapterMeta, ts); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "q8.gguf")
	os.WriteFile(path, b.Bytes(), 0o644)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a, err := Load(path)
	runtime.ReadMemStats(&after)
	if err != nil || len(a.Pairs) != 1 || a.Pairs[0].Rank() != r {
		t.Fatalf("Load = %+v, %v", a, err)
	}
	f32 := uint64(4 * (in*r + r*out))
	if grew := after.TotalAlloc - before.TotalAlloc; grew > f32*5/4 {
		t.Errorf("a Q8_0 adapter of %d KB as float32 allocated %d KB", f32>>10, grew>>10)
	}

	if _, ok := hugepage.Available(); !ok {
		t.Skip("the memory available is unknown here")
	}
	// One Q2_K lora_a (84 bytes in the file per 256 values) of more rows
	// than the machine's whole memory holds as float32, in a sparse file:
	// sized by the memory available when the test began, it passed that
	// check when other tests freed memory before Load looked, and Load
	// went on to read 2 GB of the file.
	rows := memTotal(t)/(4*gguf.QK_K) + 1
	var h bytes.Buffer
	le := func(v any) { binary.Write(&h, binary.LittleEndian, v) }
	str := func(s string) { le(uint64(len(s))); h.WriteString(s) }
	h.WriteString(gguf.Magic)
	le(uint32(3))
	le(uint64(1))
	le(uint64(2))
	for _, kv := range adapterMeta[:2] {
		str(kv.Key)
		le(uint32(gguf.String))
		str(kv.Value.(string))
	}
	str("blk.0.attn_q.weight.lora_a")
	le(uint32(2))
	le(uint64(gguf.QK_K))
	le(rows)
	le(uint32(gguf.TypeQ2_K))
	le(uint64(0))
	for h.Len()%gguf.DefaultAlignment != 0 {
		h.WriteByte(0)
	}
	path = filepath.Join(dir, "huge.gguf")
	fd, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fd.Write(h.Bytes())
	if err := fd.Truncate(int64(h.Len()) + int64(rows)*84); err != nil {
		t.Skipf("cannot make a sparse file: %v", err)
	}
	fd.Close()
	_, err = Load(path)
	if err == nil || !strings.Contains(err.Error(), "memory available") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Load of %d Q2_K rows = %v, want them refused by the memory available", rows, err)
	}
}

// TestPEFTMemory: a PEFT adapter whose matrices cannot be held as float32
// is refused, in one line, before any is made — here a sparse
// adapter_model.safetensors declaring a 16 MB F16 lora_A (32 MB as
// float32) where 16 MB are available.
func TestPEFTMemory(t *testing.T) {
	defer func(f func() (int64, bool)) { available = f }(available)
	available = func() (int64, bool) { return 16 << 20, true }
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(`{"peft_type":"LORA","r":8,"lora_alpha":8}`), 0o644)
	const rows, cols = 8, 1 << 20
	h := fmt.Sprintf(`{"base_model.model.blocks.0.attn.q_proj.lora_A.weight":{"dtype":"F16","shape":[%d,%d],"data_offsets":[0,%d]}}`, rows, cols, 2*rows*cols)
	fd, err := os.Create(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	binary.Write(fd, binary.LittleEndian, uint64(len(h)))
	fd.WriteString(h)
	if err := fd.Truncate(8 + int64(len(h)) + 2*rows*cols); err != nil {
		t.Skipf("cannot make a sparse file: %v", err)
	}
	fd.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = Load(dir)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "32 MB as float32, more than the 16 MB of memory available") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Load = %v, want it refused by the memory available", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing it allocated %d KB", grew>>10)
	}
}

// TestPEFTErrorsAreShort: a PEFT adapter's strings (peft_type, tensor
// names, targets) in an error are quoted and cut: one short line.
func TestPEFTErrorsAreShort(t *testing.T) {
	long := strings.Repeat("m\x1b", 1<<19)
	a := func(module string) string { return peftPrefix + module + ".lora_A.weight" }
	for i, c := range []struct {
		config  string
		tensors []string
	}{
		{`{"peft_type":"` + strings.Repeat(`P\u001b`, 1<<16) + `"}`, []string{a("x")}},
		{`{}`, []string{long}},    // not a LoRA name
		{`{}`, []string{a(long)}}, // lora_A without lora_B
		{`{}`, []string{a(long), peftPrefix + long + ".lora_B.weight"}}, // r = 8 below, rank 2 here
	} {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		os.MkdirAll(dir, 0o755)
		cfg := c.config
		if cfg == `{}` {
			cfg = `{"peft_type":"LORA","r":8,"lora_alpha":8}`
		}
		os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(cfg), 0o644)
		ts := map[string]safetensors.Tensor{}
		for _, n := range c.tensors {
			ts[n] = safetensors.F32([]int{2, 2}, []float32{1, 2, 3, 4})
		}
		var b bytes.Buffer
		if err := safetensors.Write(&b, ts, nil); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), b.Bytes(), 0o644)
		_, err := Load(dir)
		if err == nil || len(err.Error()) > 400 || strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("%d: error of %d bytes, want one short line: %.300v", i, len(fmt.Sprint(err)), err)
		}
	}
}

// TestPEFTOnGranite: a granite GGUF's Q and K rows are paired as llama's
// (its converter permutes them), so a PEFT adapter on a granite file that
// computes llama's model (no scales, logit_scale 1) gives the llama file's
// adapted logits exactly.
func TestPEFTOnGranite(t *testing.T) {
	dir := t.TempDir()
	m := loadCourse(t, "course/tiny-noqknorm.pt")
	peft, _ := writeBoth(t, m, randomAdapter(t, m, 3), dir)
	ad, err := Load(peft)
	if err != nil {
		t.Fatal(err)
	}
	f, err := convert.FromCourse(m, "x")
	if err != nil {
		t.Fatal(err)
	}
	mix, _ := convert.ParseMix("f32")
	convert.SetTypes(f, mix)
	var b bytes.Buffer
	if err := convert.Write(&b, f, mix, nil); err != nil {
		t.Fatal(err)
	}
	lf, err := gguf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if arch, _ := lf.String("general.architecture"); arch != "llama" {
		t.Fatalf("converted to %s, want llama", arch)
	}
	meta := []gguf.KV{{Key: "granite.logit_scale", Type: gguf.Float32, Value: float32(1)}}
	for _, kv := range lf.KV {
		if kv.Key == "general.architecture" {
			kv.Value = "granite"
		}
		if rest, ok := strings.CutPrefix(kv.Key, "llama."); ok {
			kv.Key = "granite." + rest
		}
		meta = append(meta, kv)
	}
	var ts []gguf.WriteTensor
	for _, ti := range lf.Tensors {
		w, err := lf.TensorFloat32(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: gguf.TypeF32, Data: w})
	}
	var out [2][]float32
	for i, data := range [][]byte{b.Bytes(), nil} {
		if data == nil {
			var g bytes.Buffer
			if err := gguf.Write(&g, meta, ts); err != nil {
				t.Fatal(err)
			}
			data = g.Bytes()
		}
		path := filepath.Join(dir, fmt.Sprintf("model%d.gguf", i))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		gm, err := llama.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		defer gm.Close()
		am, err := Apply(gm, []*Adapter{ad})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = logits(t, am, prompt)
	}
	if d := maxDiff(out[0], out[1]); d != 0 {
		t.Errorf("the adapted granite file's logits differ from the adapted llama file's by %g", d)
	}
}

// TestFiles: an adapter's files are those it was read from, a PEFT
// folder's two whether the folder or its safetensors file was named; a
// folder whose name ends in .safetensors is one too (Files took its
// parent for it, restating Load's rule by the name alone).
func TestFiles(t *testing.T) {
	ad := &Adapter{Pairs: []Pair{{Target: "blk.0.attn_q.weight", A: weights.NewF32(make([]float32, 8), 2, 4), B: weights.NewF32([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 4, 2)}}}
	root := t.TempDir()
	for _, dir := range []string{filepath.Join(root, "peft"), filepath.Join(root, "odd.safetensors")} {
		if err := WritePEFT(dir, ad, 2); err != nil {
			t.Fatal(err)
		}
		want := []string{filepath.Join(dir, "adapter_config.json"), filepath.Join(dir, "adapter_model.safetensors")}
		for _, path := range []string{dir, want[1]} {
			a, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Files(); !slices.Equal(got, want) {
				t.Errorf("Load(%s).Files() = %q, want %q", path, got, want)
			}
		}
	}
	var g bytes.Buffer
	if err := WriteGGUF(&g, ad, "llama", 1); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "a.gguf")
	os.WriteFile(path, g.Bytes(), 0o644)
	if a, err := Load(path); err != nil || !slices.Equal(a.Files(), []string{path}) {
		t.Errorf("a GGUF adapter's files: %v", err)
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// memTotal is the machine's memory in bytes (/proc/meminfo's MemTotal).
func memTotal(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skipf("the machine's memory is unknown here: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb uint64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb); err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	t.Skip("/proc/meminfo has no MemTotal")
	return 0
}
