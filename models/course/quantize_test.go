package course

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"chat/models"
	"chat/models/kernels"
	"chat/models/kvcache"
	"chat/models/nn"
	"chat/models/testmodels"
	"chat/models/torchpt"
	"chat/models/weights"
)

// loadInt8 is the golden model after Quantize("int8"), built once per test
// binary.
func loadInt8(t *testing.T, name, file string) (*Model, *goldenFile) {
	t.Helper()
	m, g := loadGolden(t, name, file)
	loadMu.Lock()
	defer loadMu.Unlock()
	l, ok := loadCache[name+"/int8"]
	if !ok {
		l = &loaded{g: g}
		l.m, l.err = asCourse(m.Quantize("int8"))
		loadCache[name+"/int8"] = l
	}
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.m, g
}

// blockLinears is every block matrix of m (what Quantize re-encodes).
func blockLinears(m models.Model) []weights.Linear { return nn.Linears(m.(*Model).Arch()) }

func TestInt8GoldenLogits(t *testing.T) {
	for _, gm := range goldenModels {
		t.Run(gm.name, func(t *testing.T) {
			m, g := loadInt8(t, gm.name, gm.file)
			for _, p := range g.Prompts {
				if len(p.Int8LogitsLast) == 0 {
					t.Fatalf("%s: golden has no int8_logits_last", p.Key)
				}
				checkLogitsLast(t, m, g, p.Key, p.PromptIDs, p.Int8LogitsLast)
			}
		})
	}
}

func TestInt8GoldenGreedy(t *testing.T) {
	for _, gm := range goldenModels {
		t.Run(gm.name, func(t *testing.T) {
			m, g := loadInt8(t, gm.name, gm.file)
			for _, p := range g.Prompts {
				checkGreedy(t, m, g, p.Key, p.PromptIDs, p.MaxNewTokens, p.Int8Greedy, p.Int8GreedyCache, p.Int8GreedyNocache)
			}
		})
	}
}

// TestQuantizeWeightBytes checks that the quantized model really holds no
// float linears and that its weight bytes fall by what the format saves.
func TestQuantizeWeightBytes(t *testing.T) {
	m, _ := loadGolden(t, "student", "course/student.pt")
	var linF32 int64
	for _, l := range blockLinears(m) {
		linF32 += l.Bytes()
	}
	rest := m.Info().WeightBytes - linF32
	for _, f := range quantFormats {
		q, err := m.Quantize(f)
		if err != nil {
			t.Fatal(err)
		}
		var lin int64
		for _, l := range blockLinears(q) {
			if l.Format() != f {
				t.Fatalf("%s: a block linear is %s", f, l.Format())
			}
			lin += l.Bytes()
		}
		info := q.Info()
		if info.Quant != f || info.WeightBytes != rest+lin {
			t.Fatalf("%s: Info.Quant %q, WeightBytes %d, want %d", f, info.Quant, info.WeightBytes, rest+lin)
		}
		ratio := float64(linF32) / float64(lin)
		t.Logf("%s: WeightBytes %d (f32 %d), block linears %d bytes, %.2fx smaller", f, info.WeightBytes, m.Info().WeightBytes, lin, ratio)
		if f == "int8" && (ratio < 3.9 || ratio > 4) {
			t.Errorf("int8 linears are %.3fx smaller, want ~4x", ratio)
		}
		if strings.HasPrefix(f, "int4") && (ratio < 6 || ratio > 8) {
			t.Errorf("%s linears are %.3fx smaller, want ~7x", f, ratio)
		}
	}
	if m.Info().Quant != "f32" {
		t.Fatal("Quantize changed the float model")
	}
	for _, l := range blockLinears(m) {
		if l.Format() != "f32" {
			t.Fatal("Quantize changed the float model's linears")
		}
	}
}

// quantFormats are the formats the course models are quantised to in tests.
var quantFormats = []string{"int8", "int8-a8", "int4-g32", "int4-g64", "int4-g128", "int4-g32-a8", "nf4-g64", "fp8", "fp8-e5m2",
	"q8_0", "q4_0", "q5_0", "f16", "bf16"}

// TestQuantizeEqualsDequantizedFloat checks on random weights, for every
// architecture and format, that the quantized forward computes what a float
// model holding the dequantized weights computes (the course's Int8Linear;
// int8-a8 only approximately), and that decoding token by token gives what
// the batch gives.
func TestQuantizeEqualsDequantizedFloat(t *testing.T) {
	// The float model's prefill would take the GEMM (another summation
	// order, kernels.GEMM); the quantized kernels keep MatVec's, so compare
	// in MatVec's order.
	defer kernels.SetGEMM(kernels.SetGEMM(false))
	for name, raw := range synthConfigs() {
		for _, f := range quantFormats {
			t.Run(name+"/"+f, func(t *testing.T) {
				m := synthModel(t, raw, 13)
				q, err := m.Quantize(f)
				if err != nil {
					t.Fatal(err)
				}
				// ref holds q's weights dequantised, as float32.
				qm := q.(*Model)
				refArch, err := nn.ConvertArch(qm.Arch(), func(l weights.Linear) (weights.Linear, error) {
					return weights.NewF32(weights.Dequantize(l), l.Rows(), l.Cols()), nil
				})
				if err != nil {
					t.Fatal(err)
				}
				ref := nn.NewModel(refArch, m.Info(), m.Tokenizer(), m.KVLayout())
				V := m.Info().VocabSize
				ids := randTokens(rand.New(rand.NewPCG(1, 2)), m.Info().ContextLength, V)
				want, err := kvcache.NewState(ref).Forward(ids, len(ids))
				if err != nil {
					t.Fatal(err)
				}
				want = slices.Clone(want)
				got, err := kvcache.NewState(q).Forward(ids, len(ids))
				if err != nil {
					t.Fatal(err)
				}
				d := maxAbsDiff(got, want)
				if activationsRounded(f) {
					// Quantized inputs: close to, not equal to, the float model.
					t.Logf("batch: max diff %g from the dequantized float model", d)
				} else if d != 0 {
					t.Fatalf("batch: max diff %g from the dequantized float model", d)
				}
				got = slices.Clone(got)
				s := kvcache.NewState(q)
				for i, id := range ids {
					lg, err := s.Forward([]int{id}, 1)
					if err != nil {
						t.Fatal(err)
					}
					if d := maxAbsDiff(lg, got[i*V:(i+1)*V]); d > 1e-4 {
						t.Fatalf("token %d: decode vs batch max diff %g", i, d)
					}
				}
				fl, _ := kvcache.NewState(m).Forward(ids, 1)
				t.Logf("last logits differ from float32 by %.3g", maxAbsDiff(fl, want[len(want)-V:]))
			})
		}
	}
}

func TestQuantizeErrors(t *testing.T) {
	m := synthModel(t, synthConfigs()["modern"], 1)
	for _, f := range []string{"", "int7", "Int8", "q8"} {
		if _, err := m.Quantize(f); err == nil || !strings.Contains(err.Error(), "unknown format") {
			t.Errorf("Quantize(%q): %v", f, err)
		}
	}
	if q, err := m.Quantize("f32"); err != nil || q != m {
		t.Errorf("Quantize(f32) = %p, %v; want the model itself", q, err)
	}
	q, err := m.Quantize("int8")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.(*Model).Quantize("int4-g32"); err == nil || !strings.Contains(err.Error(), "already int8") {
		t.Errorf("quantizing a quantized model: %v", err)
	}
	// A matrix whose rows are not whole blocks stays as it is (the down
	// projection's 40 columns in q8_0); a format no matrix fits is an error.
	part, err := synthModel(t, synthConfigs()["untied"], 1).Quantize("q8_0")
	got := map[string]int{}
	for _, l := range blockLinears(part) {
		got[l.Format()]++
	}
	if err != nil || got["q8_0"] == 0 || got["f32"] == 0 {
		t.Errorf("q8_0 with some rows not whole blocks: %v, formats %v", err, got)
	}
	if _, err := m.Quantize("q4_k"); err == nil || !strings.Contains(err.Error(), "no matrix can be q4_k") {
		t.Errorf("q4_k on 32-wide rows: %v", err)
	}
	// A non-finite weight is an error, not a panic or a NaN model.
	bad := synthModel(t, synthConfigs()["classic"], 1)
	down := bad.Arch().(*Classic).Blocks[1].Down.(*weights.F32).Floats()
	down[3] = float32(math.Inf(1))
	if _, err := bad.Quantize("fp8"); err == nil || !strings.Contains(err.Error(), "non-finite") {
		t.Errorf("Inf weight: %v", err)
	}
}

func TestQuantizedDecodeAllocs(t *testing.T) {
	for _, name := range []string{"classic", "mla", "moe", "gate"} {
		for _, f := range quantFormats {
			m, err := synthModel(t, synthConfigs()[name], 9).Quantize(f)
			if err != nil {
				t.Fatal(err)
			}
			s := kvcache.NewState(m)
			if _, err := s.Forward([]int{1, 2, 3, 4}, 1); err != nil {
				t.Fatal(err)
			}
			tok := []int{5}
			allocs := testing.AllocsPerRun(10, func() {
				s.Truncate(4)
				if _, err := s.Forward(tok, 1); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("%s %s: decode step allocates %v times", name, f, allocs)
			}
		}
	}
}

// BenchmarkDecodeQuant decodes one token at position 128 of student.pt in
// each format.
func BenchmarkDecodeQuant(b *testing.B) {
	f32 := benchModel(b, "course/student.pt")
	for _, f := range append([]string{"f32"}, quantFormats...) {
		m, err := f32.Quantize(f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(f, func(b *testing.B) {
			s := kvcache.NewState(m)
			if _, err := s.Forward(make([]int, 128), 1); err != nil {
				b.Fatal(err)
			}
			tok := []int{42}
			for b.Loop() {
				s.Truncate(128)
				if _, err := s.Forward(tok, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkPrefillQuant feeds a full context to student.pt in each format.
func BenchmarkPrefillQuant(b *testing.B) {
	f32 := benchModel(b, "course/student.pt")
	ids := make([]int, f32.Info().ContextLength)
	for i := range ids {
		ids[i] = (i * 37) % 4000
	}
	for _, f := range append([]string{"f32"}, quantFormats...) {
		m, err := f32.Quantize(f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(f, func(b *testing.B) {
			s := kvcache.NewState(m)
			for b.Loop() {
				s.Truncate(0)
				if _, err := s.Forward(ids, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(ids)*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// *Model is a models.Quantizer, so callers holding a models.Model can toggle.
var _ models.Quantizer = (*Model)(nil)

// activationsRounded reports whether format f also rounds or quantises the
// activations (so it is close to, not equal to, the dequantised float model).
func activationsRounded(f string) bool {
	switch f {
	case "int8-a8", "int4-g32-a8", "q8_0", "q4_0", "q5_0", "f16", "bf16":
		return true
	}
	return false
}

func asCourse(m models.Model, err error) (*Model, error) {
	if err != nil {
		return nil, err
	}
	return m.(*Model), nil
}

// TestQuantizeCalibrated: GPTQ and AWQ formats are made on a calibration
// text (tiny.pt and a few stories), every block matrix takes the format,
// the logits stay near the float model's, and without a text the format
// asks for one.
func TestQuantizeCalibrated(t *testing.T) {
	m, err := Load(testmodels.Path(t, "course/tiny.pt"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("Once upon a time, there was a little girl named Lily. She loved to play outside. ", 20)
	ids := m.Tokenizer().Encode("One day, Lily went to the park with her mom.")
	want, err := kvcache.NewState(m).Forward(ids, 1)
	if err != nil {
		t.Fatal(err)
	}
	want = slices.Clone(want)
	for _, f := range []string{"int4-g32-gptq", "int4-g64-awq"} {
		if _, err := m.Quantize(f); err == nil || !strings.Contains(err.Error(), "--calib") {
			t.Errorf("%s without a text: %v", f, err)
		}
		q, err := m.QuantizeCalib(f, text)
		if err != nil {
			t.Fatal(err)
		}
		if q.Info().Quant != f {
			t.Errorf("%s: quant %q", f, q.Info().Quant)
		}
		for _, l := range blockLinears(q) {
			if l.Format() != f {
				t.Errorf("%s: a block matrix is %s", f, l.Format())
			}
		}
		got, err := kvcache.NewState(q).Forward(ids, 1)
		if err != nil {
			t.Fatal(err)
		}
		var ab, aa, bb float64
		for i := range got {
			ab += float64(got[i]) * float64(want[i])
			aa += float64(want[i]) * float64(want[i])
			bb += float64(got[i]) * float64(got[i])
		}
		if c := ab / math.Sqrt(aa*bb); c < 0.99 {
			t.Errorf("%s: logit cosine %.4f with the float model", f, c)
		}
	}
}

// TestInt8StateDict: a state dict saved after the course's quantize_int8
// (weight_int8 and scale buffers in place of each quantized weight) loads,
// dequantized as Int8Linear's forward does, and gives the goldens' int8
// logits; a half-written layer is refused with one line.
func TestInt8StateDict(t *testing.T) {
	for _, name := range []string{"tiny", "tiny-classic", "tiny-mla"} {
		t.Run(name, func(t *testing.T) {
			_, g := loadGolden(t, name, "course/"+name+".pt")
			ck, err := torchpt.Open(testmodels.Path(t, "course/"+name+".pt"))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range ck.Keys() {
				w := ck.Tensors[k]
				if len(w.Shape) != 2 || strings.HasPrefix(k, "lm_head.") || strings.HasSuffix(k, "embed.weight") {
					continue
				}

				q, s := courseInt8(w)
				base := strings.TrimSuffix(k, ".weight")
				delete(ck.Tensors, k)
				ck.Tensors[base+".weight_int8"], ck.Tensors[base+".scale"] = q, s
			}
			m, err := FromCheckpoint(ck, name+"-int8.pt")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range g.Prompts {
				checkLogitsLast(t, m, g, p.Key, p.PromptIDs, p.Int8LogitsLast)
			}
			for k := range ck.Tensors {
				if strings.HasSuffix(k, ".scale") {
					delete(ck.Tensors, k)
					break
				}
			}
			_, err = FromCheckpoint(ck, "half.pt")
			if err == nil || !strings.Contains(err.Error(), "is not an int8 layer the course writes") {
				t.Fatalf("no scale: %v", err)
			}
			testmodels.OneShortLine(t, err, 200)
		})
	}
}

// courseInt8 is Int8Linear's buffers for w: scale = max|row| (at least
// 1e-8) / 127, Q = round(w / scale) (half to even) clamped to ±127.
func courseInt8(w *torchpt.Tensor) (q, s *torchpt.Tensor) {
	rows, cols := w.Shape[0], w.Shape[1]
	q = &torchpt.Tensor{DType: "int8", Shape: w.Shape, I64: make([]int64, rows*cols)}
	s = &torchpt.Tensor{DType: "float32", Shape: []int{rows, 1}, F32: make([]float32, rows)}
	for i := range rows {
		row := w.F32[i*cols : (i+1)*cols]
		var amax float32
		for _, v := range row {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		sc := max(amax, 1e-8) / 127
		s.F32[i] = sc
		for j, v := range row {
			q.I64[i*cols+j] = int64(max(-127, min(127, math.RoundToEven(float64(v/sc)))))
		}
	}
	return q, s
}
