package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"chat/config/settings"
	"chat/engine/bench"
	"chat/models"
	"chat/models/hugepage"
	"chat/models/kernels"
	"chat/models/kvcache"
	"chat/models/nn"
	"chat/models/plan"
	"chat/session"
	"chat/session/termtext"
)

const planUsage = "--model M [--ctx N] [--batch B] [--quant F] [--kv-quant F] [--mem SIZE] [--threads T] [--no-measure] [--reprobe]"

// planCmd is chat plan: what a model costs on this machine — weight and KV
// bytes, what a memory budget holds, the roofline bounds of decode and
// prefill against the measured machine, and the measured speed beside them.
func planCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "model file (default: the embedded model)")
	ctx := fs.Int("ctx", 0, "context per request in tokens (default: the model's)")
	batch := fs.Int("batch", 1, "sequences decoded together")
	quantFmt := fs.String("quant", "", "weight format to plan for (int8, q4_k, ...; default: as loaded)")
	kvQuant := fs.String("kv-quant", "auto", "KV cache storage of keys and values: "+strings.Join(settings.KVChoices, ", ")+" (auto: f16 for a GGUF model, f32 for a course checkpoint)")
	mem := fs.String("mem", "", "memory budget, e.g. 8GB or 512MB (default: this machine's RAM)")
	threads := fs.Int("threads", 0, "compute threads (default: all cores)")
	noMeasure := fs.Bool("no-measure", false, "do not run the model to measure its speed")
	reprobe := fs.Bool("reprobe", false, "measure the machine again instead of using the cached probe")
	pos, err := parseInterspersed(fs, args)
	if err == nil && len(pos) == 1 && *model == "" {
		*model = pos[0]
	} else if err == nil && len(pos) > 0 {
		err = fmt.Errorf("unexpected argument %q", pos[0])
	}
	if err == nil && (*batch < 1 || *ctx < 0 || *threads < 0) {
		err = fmt.Errorf("--batch must be at least 1, --ctx and --threads not negative")
	}
	if err == nil && *quantFmt != "" {
		_, err = settings.Lookup("quant").Parse(*quantFmt)
	}
	if err != nil {
		return usageError(stderr, "plan", planUsage, err)
	}
	if _, err := kvcache.FormatFor(*kvQuant, models.Info{}); err != nil {
		return usageError(stderr, "plan", planUsage, err)
	}
	budget, err := memBudget(*mem)
	if err != nil {
		return usageError(stderr, "plan", planUsage, err)
	}
	if *threads > 0 {
		kernels.SetThreads(*threads)
	}
	fail := func(err error) int { fmt.Fprintln(stderr, "chat plan:", err); return 1 }
	m, err := openModelAs(*model, *quantFmt)
	if err != nil {
		return fail(err)
	}
	kf, _ := kvcache.FormatFor(*kvQuant, m.Info())
	info, lay := m.Info(), m.KVLayout()
	// The default window, or up to the context the model was trained for.
	trained := info.MaxContext()
	n := *ctx
	if n == 0 {
		n = info.ContextLength
	}
	if note := ctxCutNote("--ctx", n, info); note != "" {
		fmt.Fprintln(stderr, "chat plan:", note) // it planned the trained context without a word
	}
	n = min(n, trained)
	kl := kvcache.LayoutOf(m, kf, kf)
	md := plan.Model{Params: info.Params, WeightBytes: info.WeightBytes, KVPerToken: int64(lay.Layers) * kl.RowBytes(),
		Context: trained, Output: int64(info.VocabSize) * int64(info.Embed), Arith: info.Arith}
	resident := info.WeightBytes
	if a, ok := m.(interface{ Arch() nn.Arch }); ok {
		resident = nn.ResidentBytes(a.Arch())
	}
	probe, err := plan.Measure(*reprobe)
	if err != nil {
		return fail(err)
	}
	mc := probe.Machine

	w := bufio.NewWriter(stdout)
	defer w.Flush()
	// The name is the file's general.name: any bytes.
	ctxText := fmt.Sprintf("context %d", info.ContextLength)
	if trained > info.ContextLength {
		ctxText = fmt.Sprintf("context %d (trained for %d: --ctx N)", info.ContextLength, trained)
	}
	fmt.Fprintf(w, "model     %s · %s · %s params · %s · %d layers\n", termtext.Escape(info.Name), info.Arch, session.ParamCount(info.Params), ctxText, info.Layers)
	fmt.Fprintf(w, "weights   %s: %s in memory, %s read per token (%.2f bytes/param), multiplied by %s\n", info.Quant, plan.FormatBytes(resident), plan.FormatBytes(md.WeightBytes), float64(md.WeightBytes)/float64(max(md.Params, 1)), md.Arith)
	fmt.Fprintf(w, "KV cache  %s: %s per token (%d layers × (%d + %d) values), %s for %d tokens\n", kf, plan.FormatBytes(md.KVPerToken), lay.Layers, lay.KDim, lay.VDim, plan.FormatBytes(md.KVPerToken*int64(n)), n)
	src := "measured now"
	if probe.Cached {
		src = "probe of " + probe.When.Local().Format("2006-01-02 15:04") + ", cached; --reprobe measures again"
	}
	fmt.Fprintf(w, "machine   peak %.1f GFLOP/s float32, %.1f GOP/s int8 (%s) · read %.1f GB/s · ridge %.1f FLOP/byte float32, %.1f int8 (%s, %d threads; %s)\n",
		mc.PeakFLOPS/1e9, mc.PeakInt8/1e9, kernels.Int8DotInstr(), mc.Bandwidth/1e9, mc.Ridge(), mc.RidgeOf(kernels.ArithInt8), probe.ISA, probe.Threads, src)

	dec := plan.Decode(mc, md, *batch, n)
	pre := plan.Prefill(mc, md, n, 1)
	fmt.Fprintf(w, "decode    batch %d at %d tokens: %.3g FLOP/byte, %s · bound %s/step = %s/token\n", *batch, n, dec.Intensity, boundBy(dec), fmtDur(dec.Bound), fmtDur(dec.Bound/time.Duration(*batch)))
	fmt.Fprintf(w, "prefill   %d tokens: %.3g FLOP/byte, %s · bound %s (%.0f tok/s)\n", n, pre.Intensity, boundBy(pre), fmtDur(pre.Bound), float64(n)/pre.Bound.Seconds())
	fit := plan.Fit(md, budget, n)
	fmt.Fprintf(w, "memory    budget %s: %s left for KV → longest context %d tokens, %d requests of %d tokens\n", plan.FormatBytes(budget), plan.FormatBytes(fit.KVBytes), fit.MaxContext, fit.Requests, n)

	if *noMeasure {
		return 0
	}
	if *batch > fit.Requests {
		w.Flush()
		return fail(fmt.Errorf("--batch %d is more than the %d requests of %d tokens the budget holds (--no-measure plans it without running it)", *batch, fit.Requests, n))
	}
	w.Flush()
	text := bench.PromptText()
	prompt := min(128, info.ContextLength/2)
	gen := min(32, info.ContextLength-prompt)
	at := prompt + gen/2 // the mean context of the measured steps
	mdec := plan.Decode(mc, md, *batch, at)
	mpre := plan.Prefill(mc, md, prompt*(*batch), *batch)
	// The best of three runs: on a shared machine a run that was
	// preempted says more about the neighbours than about the model. After
	// each decode step the probe's matrices are read for as many bytes as
	// the step read (untimed by the run), so the decode also meets a bound
	// from a bandwidth measured under the same load as its steps, over the
	// same span and kept the same way (best of the three runs), not the
	// cached probe's best short pass of another moment.
	var r bench.Result
	var bw float64
	stream := plan.NewStreamer()
	for range 3 {
		var n int64
		var d time.Duration
		ri, err := bench.RunBeside(m, text, kernels.Threads(), prompt, gen, *batch, kf, func() {
			bn, bd := stream.Read(int64(mdec.Bytes))
			n, d = n+bn, d+bd
		})
		if err != nil {
			return fail(err)
		}
		r.TGTokS, r.PPTokS = max(r.TGTokS, ri.TGTokS), max(r.PPTokS, ri.PPTokS)
		bw = max(bw, float64(n)/d.Seconds())
	}
	alongside := mc
	alongside.Bandwidth = bw
	sdec := plan.Decode(alongside, md, *batch, at)
	step := time.Duration(float64(*batch) / r.TGTokS * float64(time.Second))
	pp := time.Duration(float64(prompt*(*batch)) / r.PPTokS * float64(time.Second))
	fmt.Fprintf(w, "measured  decode %s/step at %d tokens (bound %s: %.2f× it) · prefill of %d tokens %s (bound %s: %.2f×)\n",
		fmtDur(step), at, fmtDur(mdec.Bound), step.Seconds()/mdec.Bound.Seconds(),
		prompt*(*batch), fmtDur(pp), fmtDur(mpre.Bound), pp.Seconds()/mpre.Bound.Seconds())
	fmt.Fprintf(w, "alongside read %.1f GB/s between the decode steps (as many bytes as each) → decode bound %s: measured %.2f× it\n",
		bw/1e9, fmtDur(sdec.Bound), step.Seconds()/sdec.Bound.Seconds())
	return 0
}

// boundBy says which limit a step is under, against the ridge of the
// model's arithmetic.
func boundBy(s plan.Step) string {
	if s.MemoryBound() {
		return fmt.Sprintf("< ridge %.3g: memory-bound", s.Ridge)
	}
	return fmt.Sprintf("> ridge %.3g: compute-bound", s.Ridge)
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3g ms", d.Seconds()*1e3)
	}
	return fmt.Sprintf("%.3g µs", d.Seconds()*1e6)
}

// memBudget reads --mem ("8GB", "512MB", "1.5e9"), or this machine's RAM.
func memBudget(s string) (int64, error) {
	if s == "" {
		return totalRAM()
	}
	u := strings.ToUpper(strings.TrimSpace(s))
	mult := 1.0
	for _, suf := range []struct {
		s string
		m float64
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"G", 1e9}, {"M", 1e6}, {"B", 1}} {
		if strings.HasSuffix(u, suf.s) {
			u, mult = strings.TrimSpace(strings.TrimSuffix(u, suf.s)), suf.m
			break
		}
	}
	v, err := strconv.ParseFloat(u, 64)
	if err != nil || !(v > 0) || v*mult > 1<<62 {
		return 0, fmt.Errorf("--mem %q: want a size such as 8GB or 512MB", s)
	}
	return int64(v * mult), nil
}

// totalRAM is the machine's memory (MemTotal of /proc/meminfo).
func totalRAM() (int64, error) {
	if n, ok := hugepage.Total(); ok {
		return n, nil
	}
	return 0, fmt.Errorf("cannot read this machine's memory: give --mem")
}
