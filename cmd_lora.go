package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"chat/models/convert"
	"chat/models/gguf"
	"chat/models/kernels"
	"chat/models/lora"
)

const mergeLoraUsage = "BASE ADAPTER[:SCALE]... OUT.gguf [--type T] [--threads N]"

// mergeLoraCmd is chat merge-lora: the base model with the adapters merged
// into its weights (W' = W + (α/r)·B·A), written as GGUF.
func mergeLoraCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat merge-lora", flag.ContinueOnError)
	fs.SetOutput(stderr)
	typ := fs.String("type", "", "tensor types of the output ("+strings.Join(convert.MixNames(), ", ")+"); default: as the base stores them (float32 for a checkpoint)")
	threads := fs.Int("threads", 0, "threads encoding the tensors (default: all cores)")
	output := outputFlag(fs)
	pos, err := parseInterspersed(fs, args)
	pos = withOutput(pos, *output)
	if err == nil && len(pos) < 3 {
		err = fmt.Errorf("want a base model, at least one adapter and an output file")
	}
	if err == nil && *threads < 0 {
		err = fmt.Errorf("--threads must not be negative")
	}
	if err != nil {
		return usageError(stderr, "merge-lora", mergeLoraUsage, err)
	}
	if *threads > 0 {
		kernels.SetThreads(*threads)
	}
	base, out := pos[0], pos[len(pos)-1]
	fail := func(err error) int {
		fmt.Fprintln(stderr, "chat merge-lora:", strings.TrimPrefix(strings.TrimPrefix(err.Error(), "lora: "), "convert: "))
		return 1
	}
	if err := checkOutput(base, out, "base model"); err != nil {
		return fail(err)
	}
	ads, err := loadAdapters(pos[1 : len(pos)-1])
	if err != nil {
		return fail(err)
	}
	for _, a := range ads {
		for _, f := range a.Files() {
			if err := checkOutput(f, out, "adapter "+a.Name); err != nil {
				return fail(err)
			}
		}
	}
	if err := checkReplace(out); err != nil {
		return fail(err)
	}
	m, err := openModel(base)
	if err != nil {
		return fail(err)
	}
	if c, ok := m.(interface{ GGUF() *gguf.File }); ok {
		defer c.GGUF().Close()
	}
	f, err := lora.MergedFile(m, ads)
	if err != nil {
		return fail(err)
	}
	if err := writeGGUF(f, *typ, base, out, stdout); err != nil {
		return fail(err)
	}
	return 0
}
