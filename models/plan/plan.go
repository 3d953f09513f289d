// Package plan is the back-of-the-envelope calculator of inference cost: the
// bytes a model's weights and KV cache take, the arithmetic intensity of
// decode and prefill against the machine's ridge point (peak FLOP/s ÷ read
// bandwidth: below it a step waits on memory, above it on arithmetic), the
// time bounds that follow (roofline: the larger of FLOPs ÷ peak and bytes ÷
// bandwidth), and what a memory budget holds — the longest context and how
// many requests of a given context fit beside the weights. probe.go
// measures the machine.
//
// The arithmetic, for a model of P parameters stored in W bytes, KV bytes
// per token K, a batch of B sequences at context N and a prompt of T tokens:
//
//	decode:  FLOPs 2·P·B           bytes W + B·N·K   (every weight once, each sequence's cache)
//	prefill: FLOPs 2·(P−O)·T + 2·O bytes W + T·K     (weights once, the new cache written)
//
// where O is the output layer's parameters (vocabulary × width): a prefill
// computes the logits of its last position only, as llama.cpp's does (a
// batch of prompts: of each one's last). For Llama 3.2 1B that is a fifth
// of P; counted for every prompt token, the prefill bound was 1.25× too
// long, and measured prefills beat it.
//
// Attention's own FLOPs (4·N·d per layer and token) are left out, as the
// course's calculator leaves them out: at these contexts they are a few
// per cent of 2·P.
//
// The peak is that of the arithmetic the model's weight format multiplies
// with (Model.Arith): float32 FMAs, or for the formats that quantise the
// activations to int8 (Q8_0, Q4_0, the K-quants, int8-a8, ...) int8 dot
// products, several times faster on this kind of CPU (VPDPBUSD). Each has
// its own ridge; an int8 multiply-add counts as 2 operations, as a float
// one counts as 2 FLOPs. Against the float peak an int8 model's prefill ran
// twice as fast as its "bound".
package plan

import (
	"fmt"
	"time"

	"chat/models/kernels"
)

// Machine is what a step's time is bounded by.
type Machine struct {
	PeakFLOPS float64 // float32 operations per second
	PeakInt8  float64 // int8 dot-product operations per second (0: unknown, PeakFLOPS)
	Bandwidth float64 // bytes read per second
}

// Peak is the rate of products that run on arithmetic a.
func (m Machine) Peak(a kernels.Arith) float64 {
	if a == kernels.ArithInt8 && m.PeakInt8 > 0 {
		return m.PeakInt8
	}
	return m.PeakFLOPS
}

// Ridge is the arithmetic intensity (FLOP per byte) where the two limits
// meet for float32 products: a step below it is memory-bound, above it
// compute-bound.
func (m Machine) Ridge() float64 { return m.RidgeOf(kernels.ArithFMA) }

// RidgeOf is the ridge of products that run on arithmetic a.
func (m Machine) RidgeOf(a kernels.Arith) float64 { return m.Peak(a) / m.Bandwidth }

// Model is what the calculator needs of a model.
type Model struct {
	Params      int64         // parameters (a tied matrix once)
	WeightBytes int64         // bytes of weights one forward pass reads
	KVPerToken  int64         // bytes of keys and values one cached position takes
	Context     int           // positions it was trained for
	Output      int64         // parameters of the output layer (vocabulary × width), part of Params
	Arith       kernels.Arith // what its products run on (models.Info.Arith)
}

// Step is one forward pass's cost and its roofline bound.
type Step struct {
	FLOPs     float64
	Bytes     float64
	Intensity float64       // FLOPs / Bytes
	Ridge     float64       // the machine's, for the model's arithmetic
	Compute   time.Duration // FLOPs / peak (the model's arithmetic's)
	Memory    time.Duration // Bytes / bandwidth
	Bound     time.Duration // the larger of the two
}

// MemoryBound reports whether the step waits on memory.
func (s Step) MemoryBound() bool { return s.Memory >= s.Compute }

func step(m Machine, a kernels.Arith, flops, bytes float64) Step {
	s := Step{FLOPs: flops, Bytes: bytes, Intensity: flops / bytes, Ridge: m.RidgeOf(a),
		Compute: seconds(flops / m.Peak(a)), Memory: seconds(bytes / m.Bandwidth)}
	s.Bound = max(s.Compute, s.Memory)
	return s
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Decode is one decode step of batch sequences, each at context ctx (the
// positions its attention reads).
func Decode(mc Machine, md Model, batch, ctx int) Step {
	b := float64(max(batch, 1))
	return step(mc, md.Arith, 2*float64(md.Params)*b, float64(md.WeightBytes)+b*float64(ctx)*float64(md.KVPerToken))
}

// Prefill is one pass over prompts prompts of tokens tokens in all: the
// output layer runs for each prompt's last position only.
func Prefill(mc Machine, md Model, tokens, prompts int) Step {
	t := float64(max(tokens, 1))
	rows := float64(min(max(prompts, 1), max(tokens, 1)))
	o := float64(min(max(md.Output, 0), md.Params))
	return step(mc, md.Arith, 2*(float64(md.Params)-o)*t+2*o*rows, float64(md.WeightBytes)+t*float64(md.KVPerToken))
}

// Budget is what a memory budget holds beside the weights.
type Budget struct {
	Bytes      int64 // the budget
	KVBytes    int64 // what is left for the KV cache (0 when the weights do not fit)
	MaxContext int   // the longest context one request can have (at most the model's)
	Requests   int   // requests of context ctx that fit at once
}

// Fit is what budget bytes hold of md at context ctx per request.
func Fit(md Model, budget int64, ctx int) Budget {
	b := Budget{Bytes: budget, KVBytes: max(0, budget-md.WeightBytes)}
	if md.KVPerToken <= 0 {
		return b
	}
	tokens := b.KVBytes / md.KVPerToken
	b.MaxContext = int(min(tokens, int64(md.Context)))
	if ctx > 0 {
		b.Requests = int(tokens / int64(ctx))
	}
	return b
}

// FormatBytes writes a byte count the way the plan prints it: 131,072 B,
// 12.3 MB, 140 GB (decimal units, as memory budgets are quoted).
func FormatBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.3g GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.3g MB", float64(n)/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.3g kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
