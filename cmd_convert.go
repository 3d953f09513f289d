package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"chat/models/convert"
	"chat/models/course"
	"chat/models/gguf"
	"chat/models/kernels"
	"chat/models/load"
	"chat/models/quote"
	"chat/models/regular"
	"chat/session/termtext"
)

const convertUsage = "IN OUT.gguf [--type " + "f32|f16|q8_0|q4_0|q2_k|q3_k|q4_k|q5_k|q6_k|iq4_nl|iq4_xs|...] [--threads N] (or IN OUT.gguf TYPE, as llama-quantize)"

// convertCmd is chat convert: a course checkpoint to the GGUF file
// llama.cpp runs, or a GGUF file re-quantised, with llama-quantize's choice
// of type per tensor.
func convertCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	typ := fs.String("type", "", "tensor types: "+strings.Join(convert.MixNames(), ", ")+" (default: f32 for a checkpoint, q8_0 for a GGUF file)")
	threads := fs.Int("threads", 0, "threads encoding the tensors (default: all cores)")
	output := outputFlag(fs)
	pos, err := parseInterspersed(fs, args)
	if err == nil && *output != "" && len(pos) == 2 {
		pos = []string{pos[0], *output, pos[1]} // IN -o OUT TYPE
	} else if err == nil {
		pos = withOutput(pos, *output)
	}
	if err == nil && len(pos) == 3 {
		// llama-quantize's order: IN OUT TYPE (chat convert in.gguf
		// out.gguf Q4_K_M) was "want an input and an output file, got 3
		// arguments".
		if *typ != "" {
			err = fmt.Errorf("the type is given twice: --type %s and %s", *typ, quote.Quote(pos[2]))
		}
		*typ, pos = pos[2], pos[:2]
	}
	if err == nil {
		err = wantInOut(pos)
	}
	if err == nil && *threads < 0 {
		err = errors.New("--threads must not be negative")
	}
	if err != nil {
		return usageError(stderr, "convert", convertUsage, err)
	}
	if *threads > 0 {
		kernels.SetThreads(*threads)
	}
	in, out := pos[0], pos[1]
	err = checkOutput(in, out, "input")
	if err == nil {
		err = checkReplace(out)
	}
	if err != nil {
		fmt.Fprintln(stderr, "chat convert:", err)
		return 2
	}
	f, src, err := openForConvert(in)
	if err != nil {
		fmt.Fprintln(stderr, "chat convert:", strings.TrimPrefix(err.Error(), "convert: "))
		return 1
	}
	if src != nil {
		defer src.Close()
	}
	name := *typ
	if name == "" {
		name = "f32"
		if src != nil {
			name = "q8_0"
		}
	}
	if err := writeGGUF(f, name, in, out, stdout); err != nil {
		fmt.Fprintln(stderr, "chat convert:", strings.TrimPrefix(err.Error(), "convert: "))
		return 1
	}
	return 0
}

// openForConvert reads IN: a GGUF file (re-quantised as it is; the open
// file is returned to be closed after writing) or a course checkpoint.
func openForConvert(in string) (*convert.File, *gguf.File, error) {
	if isGGUF(in) {
		src, err := gguf.Open(in)
		if err != nil {
			return nil, nil, err
		}
		f, err := convert.FromGGUF(src)
		if err != nil {
			src.Close()
			return nil, nil, err
		}
		return f, src, nil
	}
	m, err := load.Open(in)
	if err != nil {
		return nil, nil, err
	}
	cm, ok := m.(*course.Model)
	if !ok {
		return nil, nil, fmt.Errorf("%s is neither a GGUF file nor a course checkpoint", in)
	}
	f, err := convert.FromCourse(cm, strings.TrimSuffix(filepath.Base(in), filepath.Ext(in)))
	return f, nil, err
}

// writeGGUF sets the tensor types of mix name ("": keeps the types f
// stores) and writes f to out with a progress bar, then says what it wrote.
func writeGGUF(f *convert.File, name, in, out string, stdout io.Writer) error {
	var mix convert.Mix
	if name == "" {
		mix = convert.StoredMix(f)
	} else {
		var err error
		if mix, err = convert.ParseMix(name); err != nil {
			return err
		}
		if err := convert.SetTypes(f, mix); err != nil {
			return err
		}
	}
	if err := convert.Check(f); err != nil {
		return err
	}
	update, done := progressBar("converting", filepath.Base(in))
	err := writeAtomic(out, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := convert.Write(bw, f, mix, func(d, t int64) {
			if update != nil {
				update(4*d, 4*t)
			}
		}); err != nil {
			return err
		}
		return bw.Flush()
	})
	done()
	if err != nil {
		return err
	}
	st, err := os.Stat(out)
	if err != nil {
		return err
	}
	counts := map[string]int{}
	for _, t := range f.Tensors {
		counts[t.Type.String()]++
	}
	var types []string
	for t, n := range counts {
		types = append(types, fmt.Sprintf("%d %s", n, t))
	}
	sort.Strings(types)
	// The architecture is the input file's general.architecture: any bytes,
	// of any length.
	fmt.Fprintf(stdout, "wrote %s: %s, %s, %d tensors (%s), %.1f MB\n", out, termtext.Escape(quote.Cut(f.Arch, quote.Max)), mix.Name, len(f.Tensors), strings.Join(types, ", "), float64(st.Size())/1e6)
	return nil
}

// isGGUF reports whether path starts with the GGUF magic. It opens only a
// regular file: a FIFO would block the open (load.Open then says why).
func isGGUF(path string) bool {
	fh, _, err := regular.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	var magic [4]byte
	n, _ := io.ReadFull(fh, magic[:])
	return n == 4 && string(magic[:]) == gguf.Magic
}
