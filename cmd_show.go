package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"chat/models"
	"chat/models/gguf"
	"chat/models/plan"
	"chat/models/quote"
	"chat/session"
	"chat/session/termtext"
)

const showUsage = "[MODEL] [--template] [--metadata]"

// showCmd is chat show: ollama show's habit for a model file — what it is
// (architecture, size, context, vocabulary, weight formats) and how its
// chat template renders; --template prints the template's source,
// --metadata every key of a GGUF file. Without a model it shows the
// embedded one, the model chat alone runs.
func showCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tmpl := fs.Bool("template", false, "print the chat template's source as the file carries it")
	meta := fs.Bool("metadata", false, "print every metadata key of a GGUF file")
	model := fs.String("model", "", "model file (default: the embedded model; also the first argument)")
	// Two models named the first as "unexpected": parseOneArg says it
	// wants one and lists them.
	if err := parseOneArg(fs, args, "model", model); err != nil {
		return usageError(stderr, "show", showUsage, err)
	}
	m, err := openModel(*model)
	if err != nil {
		fmt.Fprintln(stderr, "chat show:", err)
		return 1
	}
	var f *gguf.File
	if g, ok := m.(interface{ GGUF() *gguf.File }); ok {
		f = g.GGUF()
	}
	var b strings.Builder
	switch {
	case *tmpl:
		src, ok := "", false
		if f != nil {
			src, ok = f.String("tokenizer.chat_template")
		}
		if !ok {
			src = "(the file carries no chat template: " + session.TemplateFor(m).Name() + " renders)"
		}
		b.WriteString(src)
	case *meta:
		if f == nil {
			fmt.Fprintln(stderr, "chat show: --metadata lists a GGUF file's keys; a course checkpoint has none")
			return 1
		}
		if n := f.Parts(); n > 1 {
			fmt.Fprintf(&b, "(the first of the %d files of a split model: every key is in it)\n", n)
		}
		for _, kv := range f.KV {
			fmt.Fprintf(&b, "%-40s %-8s %s\n", quote.Cut(kv.Key, quote.Max), kv.Type, metaValue(kv.Value, true))
		}
	default:
		describe(&b, m, f, *model == "")
	}
	io.WriteString(stdout, termtext.Clean(strings.TrimRight(b.String(), "\n")+"\n", true))
	return 0
}

// describe writes what a model is, one fact a line, then its template;
// embedded says the model is the one compiled into the binary.
func describe(b *strings.Builder, m models.Model, f *gguf.File, embedded bool) {
	in, lay := m.Info(), m.KVLayout()
	line := func(k, v string) { fmt.Fprintf(b, "%-14s %s\n", k, v) }
	name := in.Name
	if embedded {
		name += " (embedded in the binary: chat without a model runs it)"
	}
	line("model", name)
	format := "course checkpoint"
	if f != nil {
		format = "GGUF v" + strconv.Itoa(int(f.Version))
		if n := f.Parts(); n > 1 {
			format += fmt.Sprintf(", split in %d files", n)
		}
	}
	line("architecture", in.Arch+" ("+format+")")
	line("parameters", session.ParamCount(in.Params))
	line("weights", plan.FormatBytes(in.WeightBytes)+" "+in.Quant+tensorTypes(f))
	line("layers", strconv.Itoa(in.Layers))
	line("embedding", strconv.Itoa(in.Embed))
	heads := fmt.Sprintf("%d query, %d key/value", in.Heads, in.KVHeads)
	if lay.KDim > 0 && lay.Heads > 0 {
		heads += fmt.Sprintf(" (head size %d)", lay.KDim/lay.Heads)
	}
	line("heads", heads)
	ctx := strconv.Itoa(in.ContextLength)
	if in.TrainContext > in.ContextLength {
		ctx = fmt.Sprintf("%d trained; %d opened unless --ctx-size N", in.TrainContext, in.ContextLength)
	}
	line("context", ctx)
	line("vocabulary", strconv.Itoa(in.VocabSize)+" tokens")
	if in.Stage != "" {
		line("stage", in.Stage)
	}
	// The template below renders for either model; which one it chats with
	// by default is not the same.
	if session.DefaultMode(m) == "chat" {
		line("mode", "chat: messages go through the chat template below (--raw continues text)")
	} else {
		line("mode", "raw: the prompt is continued as text (--chat uses the chat template below)")
	}
	if f != nil {
		for _, k := range []string{"general.license", "general.basename", "general.size_label", "general.finetune"} {
			if v, ok := f.String(k); ok && v != "" {
				line(strings.TrimPrefix(k, "general."), quote.Cut(v, quote.Max))
			}
		}
	}
	b.WriteString("\n" + session.DescribeTemplate(m) + "\n")
}

// tensorTypes counts a GGUF file's tensors by type (" (96 q4_k, 17
// q6_k, 33 f32)"), most first; "" for other models.
func tensorTypes(f *gguf.File) string {
	if f == nil {
		return ""
	}
	n := map[string]int{}
	for _, t := range f.Tensors {
		n[strings.ToLower(t.Type.String())]++
	}
	names := make([]string, 0, len(n))
	for k := range n {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(n[b]-n[a], strings.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%d %s", n[k], k)
	}
	return " (" + strings.Join(parts, ", ") + " tensors)"
}

// metaValue is a metadata value on one line: strings quoted and cut as
// messages cut them (quote.Quote), arrays as their length and first items;
// an array's arrays without theirs (items false), so that arrays nested
// eight deep cannot make a line of 6^8 items.
func metaValue(v any, items bool) string {
	switch x := v.(type) {
	case string:
		if len(x) > quote.Max {
			return quote.Quote(x) + fmt.Sprintf(" (%d bytes)", len(x))
		}
		return strconv.Quote(x)
	case gguf.ArrayValue:
		if !items {
			return fmt.Sprintf("[%d %s]", x.Len(), x.Elem)
		}
		data := reflect.ValueOf(x.Data)
		var parts []string
		for i := 0; i < data.Len() && i < 6; i++ {
			parts = append(parts, metaValue(data.Index(i).Interface(), false))
		}
		more := ""
		if data.Len() > 6 {
			more = ", …"
		}
		return fmt.Sprintf("[%d %s: %s%s]", x.Len(), x.Elem, strings.Join(parts, ", "), more)
	}
	return fmt.Sprint(v)
}
