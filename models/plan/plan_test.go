package plan

import (
	"math"
	"testing"
	"time"

	"chat/models/weights"
)

// The worked example of seed 002 (the course's inference-economics
// chapter): an H100-class accelerator (1,000 TFLOP/s of 16-bit matrix math,
// 3.35 TB/s of HBM) running an 8-billion-parameter Llama-3-style model
// ("7B class": 32 layers, 8 KV heads of 128, 16-bit weights and cache), and
// a 70B model's weights at 16 and 4 bits.
var (
	h100 = Machine{PeakFLOPS: 1000e12, Bandwidth: 3.35e12}
	m8b  = Model{Params: 8e9, WeightBytes: WeightBytes(8e9, 2), KVPerToken: KVBytesPerToken(32, 8, 128, 2), Context: 8192}
)

// KVBytesPerToken (the course calculator's, for the seed example) is keys and values of one position: 2 (K and V) ×
// layers × KV heads × head size × bytes per value.
func KVBytesPerToken(layers, kvHeads, headDim int, bytesPerValue float64) int64 {
	return int64(math.Round(2 * float64(layers) * float64(kvHeads) * float64(headDim) * bytesPerValue))
}

// WeightBytes is params stored at bytesPerParam (2 for f16, 0.5 for 4-bit).
func WeightBytes(params int64, bytesPerParam float64) int64 {
	return int64(math.Round(float64(params) * bytesPerParam))
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

func TestSeedRidge(t *testing.T) {
	if r := h100.Ridge(); math.Round(r) != 299 {
		t.Fatalf("ridge %.2f FLOP/byte, want ≈ 299", r)
	}
}

func TestSeedKVBytesPerToken(t *testing.T) {
	if m8b.KVPerToken != 131072 {
		t.Fatalf("KV bytes per token %d, want 131,072", m8b.KVPerToken)
	}
}

func TestSeedWeights(t *testing.T) {
	if b := WeightBytes(70e9, 2); b != 140e9 {
		t.Errorf("70B at 16 bits: %d bytes, want 140 GB", b)
	}
	if b := WeightBytes(70e9, 0.5); b != 35e9 {
		t.Errorf("70B at 4 bits: %d bytes, want 35 GB", b)
	}
	if s := FormatBytes(WeightBytes(70e9, 2)); s != "140 GB" {
		t.Errorf("printed %q", s)
	}
}

// TestSeedDecodeBound: one token reads every weight once, 16 GB at 3.35
// TB/s: 4.78 ms; 16 GFLOP is 1 FLOP per byte, far below the ridge.
func TestSeedDecodeBound(t *testing.T) {
	s := Decode(h100, m8b, 1, 0)
	if got := s.Bound.Seconds() * 1e3; math.Round(got*100)/100 != 4.78 {
		t.Fatalf("decode bound %.4f ms, want 4.78", got)
	}
	if !s.MemoryBound() || s.Intensity != 1 {
		t.Fatalf("decode intensity %.3f, memory-bound %v", s.Intensity, s.MemoryBound())
	}
	// A batch of 64 at 2,048 tokens of context reads 64 caches as well.
	b := Decode(h100, m8b, 64, 2048)
	if want := 2 * 8e9 * 64 / (16e9 + 64*2048*131072.0); !near(b.Intensity, want, 1e-12) || !b.MemoryBound() {
		t.Fatalf("batch 64: intensity %.2f, want %.2f", b.Intensity, want)
	}
}

// TestSeedPrefillBound: a 1,000-token prompt is 16 TFLOP, 16 ms at 1,000
// TFLOP/s, and about 1,000 FLOP per byte: compute-bound.
func TestSeedPrefillBound(t *testing.T) {
	s := Prefill(h100, m8b, 1000, 1)
	if s.Bound != 16*time.Millisecond {
		t.Fatalf("prefill bound %v, want 16ms", s.Bound)
	}
	if s.MemoryBound() || s.Intensity < h100.Ridge() {
		t.Fatalf("prefill intensity %.0f against ridge %.0f", s.Intensity, h100.Ridge())
	}
}

// TestPrefillOutputOnce: the output layer runs for each prompt's last
// position only. Llama 3.2 1B: 1.236e9 parameters, 128256 × 2048 of them
// the (tied) output; 128 tokens are 2·(P−O)·128 + 2·O FLOPs, and a batch of
// 4 prompts of 32 tokens computes 4 rows of logits.
func TestPrefillOutputOnce(t *testing.T) {
	md := Model{Params: 1_235_814_400, WeightBytes: 1.31e9, Output: 128256 * 2048}
	p, o := float64(md.Params), float64(md.Output)
	if got, want := Prefill(h100, md, 128, 1).FLOPs, 2*(p-o)*128+2*o; got != want {
		t.Errorf("one prompt: %.6g FLOPs, want %.6g", got, want)
	}
	if got, want := Prefill(h100, md, 128, 4).FLOPs, 2*(p-o)*128+2*o*4; got != want {
		t.Errorf("4 prompts: %.6g FLOPs, want %.6g", got, want)
	}
	if d := Decode(h100, md, 1, 0).FLOPs; d != 2*p {
		t.Errorf("decode %.6g FLOPs, want 2·P", d)
	}
}

// TestFit: an 80 GB card holds the 16 GB of weights and 64 GB of cache:
// 488,281 positions, so the model's whole 8,192 context, and 59 requests
// of 8,192 tokens.
func TestFit(t *testing.T) {
	b := Fit(m8b, 80e9, 8192)
	if b.KVBytes != 64e9 || b.MaxContext != 8192 || b.Requests != 59 {
		t.Fatalf("%+v", b)
	}
	if b := Fit(m8b, 10e9, 8192); b.KVBytes != 0 || b.MaxContext != 0 || b.Requests != 0 {
		t.Fatalf("weights larger than the budget: %+v", b)
	}
	if b := Fit(m8b, 16e9+131072*100, 50); b.MaxContext != 100 || b.Requests != 2 {
		t.Fatalf("room for 100 positions: %+v", b)
	}
}

// TestPrefillPeakByFormat: a prefill is bounded by the peak of the
// arithmetic its weight format multiplies with — int8 dot products for the
// formats that quantise the activations to int8, float32 FMAs for the
// others (f16 and bf16 widen to float32) — and is compute- or memory-bound
// against that arithmetic's ridge. A decode step stays bound by its bytes.
func TestPrefillPeakByFormat(t *testing.T) {
	mc := Machine{PeakFLOPS: 200e9, PeakInt8: 800e9, Bandwidth: 25e9}
	for _, c := range []struct {
		format string
		peak   float64
	}{
		{"f32", 200e9}, {"f16", 200e9}, {"bf16", 200e9}, {"int8", 200e9}, {"nf4-g64", 200e9},
		{"q8_0", 800e9}, {"q4_0", 800e9}, {"q5_0", 800e9}, {"iq4_nl", 800e9}, {"q4_k", 800e9},
		{"q5_k", 800e9}, {"q6_k", 800e9}, {"iq4_xs", 800e9}, {"int8-a8", 800e9}, {"int4-g32-a8", 800e9},
	} {
		if err := weights.CheckFormat(c.format); err != nil {
			t.Fatal(err)
		}
		md := Model{Params: 110e6, WeightBytes: 117e6, KVPerToken: 36864, Arith: weights.ArithOf(c.format)}
		s := Prefill(mc, md, 128, 1)
		if s.Compute != seconds(s.FLOPs/c.peak) || s.Ridge != c.peak/mc.Bandwidth {
			t.Errorf("%s: prefill compute %v, ridge %.1f; want %v at %.0f GOP/s, ridge %.1f",
				c.format, s.Compute, s.Ridge, seconds(s.FLOPs/c.peak), c.peak/1e9, c.peak/mc.Bandwidth)
		}
		if s.Bound != max(s.Compute, s.Memory) || s.MemoryBound() != (s.Intensity <= s.Ridge) {
			t.Errorf("%s: intensity %.0f against ridge %.1f, memory-bound %v", c.format, s.Intensity, s.Ridge, s.MemoryBound())
		}
		if d := Decode(mc, md, 1, 1024); !d.MemoryBound() || d.Bound != d.Memory {
			t.Errorf("%s: decode %+v is not bound by its bytes", c.format, d)
		}
	}
	// A machine without an int8 peak (a probe of before it was measured)
	// bounds every format by the float one.
	old := Machine{PeakFLOPS: 200e9, Bandwidth: 25e9}
	if p := old.Peak(weights.ArithOf("q8_0")); p != old.PeakFLOPS {
		t.Errorf("no int8 peak: q8_0 at %v", p)
	}
}
