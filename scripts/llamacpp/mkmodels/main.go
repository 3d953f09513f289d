// Command mkmodels writes the random-weight GGUF models of the llama.cpp
// fixtures (models/llama/randmodel.Specs) into a folder and prints a JSON
// manifest on stdout: for each model its name, file, sha256 and the input
// ids to feed. scripts/llamacpp/regen.sh passes the manifest to
// reference.mjs, which runs llama.cpp on every file.
//
// usage: go run ./scripts/llamacpp/mkmodels -out DIR [-vocab DIR] [NAME...]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"chat/models/gguf"
	"chat/models/llama/randmodel"
)

type entry struct {
	Name     string `json:"name"`
	Arch     string `json:"arch"`
	Type     string `json:"type"`
	File     string `json:"file"`
	SHA256   string `json:"sha256"`
	Vocab    string `json:"vocab"`
	InputIDs []int  `json:"input_ids"`
}

func main() {
	out := flag.String("out", "", "folder for the .gguf files (required)")
	vocabDir := flag.String("vocab", "../shared/models/vocab", "folder with the ggml-vocab-*.gguf files")
	flag.Parse()
	if *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, *vocabDir, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "mkmodels:", err)
		os.Exit(1)
	}
}

func run(out, vocabDir string, names []string) error {
	specs := randmodel.Specs()
	if len(names) > 0 {
		specs = specs[:0]
		for _, n := range names {
			s, ok := randmodel.Lookup(n)
			if !ok {
				return fmt.Errorf("unknown model %q", n)
			}
			specs = append(specs, s)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var manifest []entry
	for _, s := range specs {
		vp := filepath.Join(vocabDir, s.Vocab)
		path, sum, err := randmodel.WriteFile(out, s, vp)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		vocab, err := gguf.Open(vp)
		if err != nil {
			return err
		}
		ids, err := s.InputIDs(vocab)
		vocab.Close()
		if err != nil {
			return err
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		st, _ := os.Stat(path)
		fmt.Fprintf(os.Stderr, "mkmodels: %s (%d bytes) sha256 %s\n", abs, st.Size(), sum)
		manifest = append(manifest, entry{Name: s.Name, Arch: s.Arch, Type: s.Type.String(), File: abs,
			SHA256: sum, Vocab: s.Vocab, InputIDs: ids})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	return enc.Encode(manifest)
}
