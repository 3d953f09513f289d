// Package report measures what quantization costs a model: for each weight
// format, the weight bytes and how far its logits move from the float32
// model's over windows of held-out text — the protocol of the course goldens'
// int8_quality (16 windows of context_length tokens, each one forward from
// position 0; per-position cosine similarity of the logits, top-1 agreement),
// plus the held-out loss (mean next-token cross-entropy).
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"chat/models"
	"chat/models/kvcache"
	"chat/models/nn"
	"chat/models/weights"
)

// DefaultFormats are the formats a report compares when Options.Formats is
// empty.
// A "kv-F" row (kv-int8, kv-fp8, kv-int4) is the float32 weights with keys
// and values stored as KV format F.
var DefaultFormats = []string{"f32", "int8", "int8-a8", "int4-g32", "int4-g128", "int4-g32-a8", "int4-g32-gptq",
	"int4-g32-awq", "nf4-g64", "fp8", "fp8-e5m2", "kv-int8", "kv-fp8", "kv-int4"}

// kvRow reports whether format f is a "kv-F" row, and F.
func kvRow(f string) (kvcache.Format, bool) {
	name, ok := strings.CutPrefix(f, "kv-")
	if !ok {
		return kvcache.F32, false
	}
	kf, err := kvcache.ParseFormat(name)
	return kf, err == nil && kf != kvcache.F32
}

// Options tune a report; the zero value is the goldens' protocol.
type Options struct {
	Formats []string // default DefaultFormats; "f32" is always measured
	Windows int      // windows of held-out text; default 16
	// Starts, when set, are the windows' first token indexes (e.g. a golden's
	// window_starts) and override Windows.
	Starts []int
	// CalibText is the calibration text of the calibrated formats (GPTQ,
	// AWQ: weights.Calibrated); they are left out without one. When it is
	// the held-out text itself (Calib "held-out"), they calibrate on its
	// first nn.CalibTokens tokens and every format is measured on windows
	// of the tokens after them, so no format is scored on text it saw.
	CalibText string
	// CalibHeldOut says CalibText is the held-out text (Report also
	// treats an identical CalibText so, and refuses one text inside the
	// other).
	CalibHeldOut bool
}

// Row is one format's numbers.
type Row struct {
	Format      string  `json:"format"`
	WeightBytes int64   `json:"weight_bytes"` // read per decoded token (models.Info)
	KVBytes     int64   `json:"kv_bytes"`     // stored per position
	MeanCosine  float64 `json:"mean_cosine"`  // mean over windows of the mean per-position cosine vs f32
	Top1        float64 `json:"top1_agreement"`
	Loss        float64 `json:"loss"` // mean next-token cross-entropy, nats
}

// Table is a report.
type Table struct {
	Model     string `json:"model"`
	Tokens    int    `json:"tokens"`     // held-out tokens available
	WindowLen int    `json:"window_len"` // context_length, or fewer for a short text
	Starts    []int  `json:"window_starts"`
	Positions int    `json:"positions"` // windows × window_len
	Rows      []Row  `json:"formats"`
}

// Report tokenizes text with m's tokenizer (ordinary text, no BOS, as the
// course's encode_ordinary) and runs ReportTokens.
func Report(m models.Model, text string, opt Options) (*Table, error) {
	if m == nil {
		return nil, errors.New("quant report: no model")
	}
	if c := opt.CalibText; c != "" && !opt.CalibHeldOut {
		// Never score text a calibrated format saw: the same text is the
		// held-out case; one inside the other is refused.
		switch {
		case c == text:
			opt.CalibHeldOut = true
		case strings.Contains(text, c) || strings.Contains(c, text):
			return nil, errors.New("quant report: the calibration text and the held-out text contain one another; the windows would score text GPTQ and AWQ calibrated on")
		}
	}
	tok := m.Tokenizer()
	if tok == nil {
		return nil, errors.New("quant report: the model has no tokenizer")
	}
	tokens := tok.Encode(text)
	if opt.CalibHeldOut && opt.CalibText == text && len(opt.Starts) == 0 && len(tokens) > nn.CalibTokens+2 {
		tokens = tokens[nn.CalibTokens:]
	}
	return ReportTokens(m, tokens, opt)
}

// ReportTokens measures every format on windows of tokens. Windows hold
// context_length tokens (all of the text but one token if it is shorter) and
// are spaced evenly from 0 to len(tokens)-window_len-1 (numpy's linspace,
// truncated, as the goldens' window_starts), so each window's last position
// still has a next token for the loss. Each format's logits are compared at
// every position of every window with the float32 model's.
func ReportTokens(m models.Model, tokens []int, opt Options) (*Table, error) {
	if m == nil {
		return nil, errors.New("quant report: no model")
	}
	info := m.Info()
	if info.Quant != "f32" {
		return nil, fmt.Errorf("quant report: %s is %s; the report needs the float32 model to compare with", info.Name, info.Quant)
	}
	formats := opt.Formats
	if len(formats) == 0 {
		formats = DefaultFormats
	}
	if !slices.Contains(formats, "f32") {
		formats = append([]string{"f32"}, formats...)
	}
	if opt.CalibText == "" && len(opt.Formats) == 0 {
		formats = slices.DeleteFunc(slices.Clone(formats), weights.Calibrated)
	}
	for i, f := range formats {
		if _, kv := kvRow(f); !kv {
			if err := weights.CheckFormat(f); err != nil {
				return nil, fmt.Errorf("quant report: %w", err)
			}
		}
		if slices.Contains(formats[:i], f) {
			return nil, fmt.Errorf("quant report: format %s given twice", f)
		}
	}
	if err := checkTokens(tokens, info.VocabSize); err != nil {
		return nil, err
	}
	T := min(info.ContextLength, len(tokens)-1)
	starts := opt.Starts
	if len(starts) == 0 {
		starts = windowStarts(opt.Windows, len(tokens), T)
	}
	for _, s := range starts {
		if s < 0 || s+T+1 > len(tokens) {
			return nil, fmt.Errorf("quant report: window start %d needs tokens up to %d, the text has %d", s, s+T+1, len(tokens))
		}
	}

	// One model per format; the float32 model is the one given.
	ms := make([]models.Model, len(formats))
	kvs := make([]kvcache.Format, len(formats))
	for i, f := range formats {
		qm := m
		if kf, ok := kvRow(f); ok {
			kvs[i] = kf
		} else if f != "f32" {
			q, ok := m.(models.Quantizer)
			if !ok {
				return nil, fmt.Errorf("quant report: %s (%T) cannot be quantized", info.Name, m)
			}
			var err error
			if c, ok := m.(models.CalibQuantizer); ok && weights.Calibrated(f) {
				qm, err = c.QuantizeCalib(f, opt.CalibText)
			} else {
				qm, err = q.Quantize(f)
			}
			if err != nil {
				return nil, fmt.Errorf("quant report: %w", err)
			}
		}
		ms[i] = qm
	}
	return compare(formats, ms, kvs, tokens, starts, T)
}

// Compare measures models against the first of them (the reference) on
// windows of tokens as ReportTokens does, each row named by names: variants
// of one model such as pruned or adapted ones.
func Compare(names []string, ms []models.Model, tokens []int, opt Options) (*Table, error) {
	if len(ms) == 0 || len(names) != len(ms) {
		return nil, errors.New("quant report: no models to compare")
	}
	info := ms[0].Info()
	if err := checkTokens(tokens, info.VocabSize); err != nil {
		return nil, err
	}
	T := min(info.ContextLength, len(tokens)-1)
	return compare(names, ms, make([]kvcache.Format, len(ms)), tokens, windowStarts(opt.Windows, len(tokens), T), T)
}

// windowStarts spaces n windows (default 16) of T tokens evenly over
// tokens tokens, leaving each a next token.
func windowStarts(n, tokens, T int) []int {
	if n <= 0 {
		n = 16
	}
	starts := make([]int, n)
	for i := range starts {
		if n > 1 {
			starts[i] = int(float64(i) * float64(tokens-T-1) / float64(n-1))
		}
	}
	return starts
}

// compare runs every model over the windows and measures each against the
// first.
func compare(names []string, ms []models.Model, kvs []kvcache.Format, tokens, starts []int, T int) (*Table, error) {
	type run struct {
		m       models.Model
		s       *models.State
		kv      int64
		cos, ce float64
		agree   int
	}
	runs := make([]*run, len(ms))
	for i, m := range ms {
		s, err := kvcache.NewStateAs(m, kvs[i])
		if err != nil {
			return nil, fmt.Errorf("quant report: %s: %w", names[i], err)
		}
		lay := kvcache.LayoutOf(m, kvs[i], kvs[i])
		runs[i] = &run{m: m, s: s, kv: int64(lay.Layers) * lay.RowBytes()}
	}
	formats, info := names, ms[0].Info()

	V := info.VocabSize
	ref := make([]float32, T*V)
	for _, start := range starts {
		win := tokens[start : start+T]
		next := tokens[start+1 : start+T+1]
		for i, r := range runs {
			r.s.Truncate(0)
			lg, err := r.s.Forward(win, T)
			if err != nil {
				return nil, fmt.Errorf("quant report: %s: %w", formats[i], err)
			}
			if i == 0 {
				copy(ref, lg)
			}
			var wc float64
			for p := 0; p < T; p++ {
				a, b := ref[p*V:(p+1)*V], lg[p*V:(p+1)*V]
				wc += cosine(a, b)
				if argmax(a) == argmax(b) {
					r.agree++
				}
				r.ce += crossEntropy(b, next[p])
			}
			r.cos += wc / float64(T)
		}
	}
	tab := &Table{Model: info.Name, Tokens: len(tokens), WindowLen: T, Starts: slices.Clone(starts), Positions: T * len(starts)}
	for i, r := range runs {
		tab.Rows = append(tab.Rows, Row{
			Format:      formats[i],
			WeightBytes: r.m.Info().WeightBytes,
			KVBytes:     r.kv,
			MeanCosine:  r.cos / float64(len(starts)),
			Top1:        float64(r.agree) / float64(tab.Positions),
			Loss:        r.ce / float64(tab.Positions),
		})
	}
	return tab, nil
}

// Row returns the named format's row, or false.
func (t *Table) Row(format string) (Row, bool) {
	for _, r := range t.Rows {
		if r.Format == format {
			return r, true
		}
	}
	return Row{}, false
}

// Text is a plain-text table.
func (t *Table) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d windows × %d tokens (%d positions) of %d held-out tokens\n",
		t.Model, len(t.Starts), t.WindowLen, t.Positions, t.Tokens)
	w := 10
	for _, r := range t.Rows {
		w = max(w, len(r.Format))
	}
	fmt.Fprintf(&b, "%-*s %14s %8s %9s %12s %8s %8s\n", w, "format", "weight bytes", "vs f32", "KV/token", "mean cosine", "top-1", "loss")
	var f32 int64
	if r, ok := t.Row("f32"); ok {
		f32 = r.WeightBytes
	}
	for _, r := range t.Rows {
		ratio := "-"
		if f32 > 0 && r.WeightBytes > 0 {
			ratio = fmt.Sprintf("%.2fx", float64(f32)/float64(r.WeightBytes))
		}
		fmt.Fprintf(&b, "%-*s %14s %8s %9s %12.6f %7.2f%% %8.4f\n",
			w, r.Format, commas(r.WeightBytes), ratio, commas(r.KVBytes), r.MeanCosine, 100*r.Top1, r.Loss)
	}
	return b.String()
}

// JSON is the table as indented JSON.
func (t *Table) JSON() ([]byte, error) { return json.MarshalIndent(t, "", "  ") }

func commas(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// cosine is F.cosine_similarity of two logit rows, summed in float64.
func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i, x := range a {
		y := float64(b[i])
		ab += float64(x) * y
		aa += float64(x) * float64(x)
		bb += y * y
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// crossEntropy is -log softmax(logits)[target].
func crossEntropy(logits []float32, target int) float64 {
	m := math.Inf(-1)
	for _, v := range logits {
		m = max(m, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - m)
	}
	return m + math.Log(sum) - float64(logits[target])
}

// argmax is the first index of the largest value (torch.argmax's tie rule).
func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// checkTokens refuses a text too short to score or with ids outside the
// vocabulary.
func checkTokens(tokens []int, vocab int) error {
	if len(tokens) < 2 {
		return fmt.Errorf("quant report: the held-out text has %d tokens; need at least 2", len(tokens))
	}
	for _, t := range tokens {
		if t < 0 || t >= vocab {
			return fmt.Errorf("quant report: token id %d outside the model's vocabulary of %d", t, vocab)
		}
	}
	return nil
}
