package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"chat/engine/bench"
	"chat/models"
	"chat/models/convert"
	"chat/models/gguf"
	"chat/models/kernels"
	"chat/models/prune"
	"chat/models/quant/report"
	"chat/session/termtext"
)

const pruneUsage = "IN OUT.gguf (--magnitude S | --nm 2:4) [--method magnitude|wanda|sparsegpt] [--calib FILE] [--text FILE] [--type T] [--threads N] [--json]"

// pruneCmd is chat prune: zero a model's weights by magnitude, Wanda or
// SparseGPT, unstructured or N:M, write the pruned model as GGUF and report
// what it costs (loss and top-1 agreement against the original, beside
// magnitude pruning of the same shape).
func pruneCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sparsity := fs.Float64("magnitude", -1, "unstructured: zero this fraction of the weights (0 to 1)")
	fs.Float64Var(sparsity, "sparsity", -1, "same as --magnitude")
	nm := fs.String("nm", "", "structured: keep N of every M consecutive weights of a row, e.g. 2:4")
	method := fs.String("method", "magnitude", "score: magnitude, wanda (|W|·‖X‖ over the calibration text) or sparsegpt (with error correction)")
	calib := fs.String("calib", "", "calibration text (default: ../shared/models/text/TinyStories-valid-head.txt; its first half when it is also the report's text)")
	text := fs.String("text", "", "held-out text for the report (default: the second half of the calibration text)")
	windows := fs.Int("calib-windows", 4, "calibration windows of the context length")
	typ := fs.String("type", "", "tensor types of the output (default: as stored, float32 for a checkpoint)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	threads := fs.Int("threads", 0, "compute threads, also encoding the tensors (default: all cores)")
	output := outputFlag(fs)
	pos, err := parseInterspersed(fs, args)
	if err == nil {
		pos = withOutput(pos, *output)
		err = wantInOut(pos)
	}
	var o prune.Options
	if err == nil {
		o, err = pruneOptions(*method, *sparsity, *nm)
	}
	if err == nil && *windows < 1 {
		err = errors.New("--calib-windows must be at least 1")
	}
	if err == nil && *threads < 0 {
		err = errors.New("--threads must not be negative")
	}
	if err != nil {
		return usageError(stderr, "prune", pruneUsage, err)
	}
	if *threads > 0 {
		kernels.SetThreads(*threads)
	}
	in, out := pos[0], pos[1]
	fail := func(err error) int {
		fmt.Fprintln(stderr, "chat prune:", strings.TrimPrefix(strings.TrimPrefix(err.Error(), "prune: "), "convert: "))
		return 1
	}
	for _, c := range [][2]string{{in, "input"}, {*calib, "calibration text"}, {*text, "report's text"}} {
		if err := checkOutput(c[0], out, c[1]); err != nil {
			return fail(err)
		}
	}
	if err := checkReplace(out); err != nil {
		return fail(err)
	}
	m, err := openModel(in)
	if err != nil {
		return fail(err)
	}
	if c, ok := m.(interface{ GGUF() *gguf.File }); ok {
		defer c.GGUF().Close()
	}
	calibIDs, evalIDs, err := pruneTexts(m, *calib, *text)
	if err != nil {
		return fail(err)
	}
	run := func(o prune.Options) (models.Model, prune.Stats, error) {
		if o.Method == "sparsegpt" {
			return prune.SparseGPT(m, o, calibIDs, *windows)
		}
		var cal prune.Calibration
		if o.Method == "wanda" {
			if cal, err = prune.Calibrate(m, calibIDs, *windows); err != nil {
				return nil, prune.Stats{}, err
			}
		}
		return prune.Prune(m, o, cal)
	}
	pm, st, err := run(o)
	if err != nil {
		return fail(err)
	}
	names, ms := []string{"original"}, []models.Model{m}
	if o.Method != "magnitude" {
		base := o
		base.Method = "magnitude"
		bm, _, err := run(base)
		if err != nil {
			return fail(err)
		}
		names, ms = append(names, base.String()), append(ms, bm)
	}
	names, ms = append(names, o.String()), append(ms, pm)

	f, err := convert.FromModel(pm, m, "+pruned")
	if err != nil {
		return fail(err)
	}
	if err := writeGGUF(f, *typ, in, out, stdout); err != nil {
		return fail(err)
	}
	tab, err := report.Compare(names, ms, evalIDs, report.Options{})
	if err != nil {
		return fail(err)
	}
	if *asJSON {
		b, err := tab.JSON()
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(stdout, termtext.JSON(string(b))) // the table names the model: the file's general.name
		return 0
	}
	fmt.Fprintf(stdout, "pruned %s: %d matrices, %d of %d weights zero: sparsity %.6f\n", o, st.Matrices, st.Zeros, st.Weights, st.Sparsity())
	fmt.Fprint(stdout, termtext.Clean(tab.Text(), true))
	return 0
}

// pruneOptions reads the shape and method flags.
func pruneOptions(method string, sparsity float64, nm string) (prune.Options, error) {
	o := prune.Options{Method: method, Sparsity: sparsity}
	switch method {
	case "magnitude", "wanda", "sparsegpt":
	default:
		return o, fmt.Errorf("--method %q: want magnitude, wanda or sparsegpt", method)
	}
	switch {
	case nm != "" && sparsity >= 0:
		return o, errors.New("give --magnitude S or --nm N:M, not both")
	case nm != "":
		n, m, ok := strings.Cut(nm, ":")
		var err1, err2 error
		o.N, err1 = strconv.Atoi(n)
		o.M, err2 = strconv.Atoi(m)
		if !ok || err1 != nil || err2 != nil || o.M < 1 || o.N < 0 || o.N >= o.M {
			return o, fmt.Errorf("--nm %q: want N:M with 0 ≤ N < M, such as 2:4", nm)
		}
		o.Sparsity = 0
	case !(sparsity >= 0 && sparsity < 1): // NaN too, which passed here and was refused after the model loaded
		return o, errors.New("give --magnitude S (a fraction from 0 to below 1) or --nm N:M")
	}
	return o, nil
}

// pruneTexts tokenizes the calibration and report texts; one file serves
// both by halves.
func pruneTexts(m models.Model, calib, text string) (calibIDs, evalIDs []int, err error) {
	c, err := bench.NeedText(calib, "--calib")
	if err != nil {
		return nil, nil, err
	}
	calibIDs = m.Tokenizer().Encode(c)
	if text == "" || text == calib {
		half := len(calibIDs) / 2
		calibIDs, evalIDs = calibIDs[:half], calibIDs[half:]
	} else {
		t, err := bench.ReadText(text) // not "": above
		if err != nil {
			return nil, nil, err
		}
		evalIDs = m.Tokenizer().Encode(t)
	}
	if len(calibIDs) < 2 || len(evalIDs) < 2 {
		return nil, nil, errors.New("the calibration and report texts need some tokens each")
	}
	return calibIDs, evalIDs, nil
}
