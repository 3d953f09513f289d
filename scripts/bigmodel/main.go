// Command bigmodel writes a random-weight stand-in for Llama 3.2 1B
// Instruct: the real model's shape and hyperparameters, the real Llama 3
// vocabulary and merges (copied from ggml-vocab-llama-bpe.gguf), its EOS
// (<|eot_id|>, as the Instruct GGUFs set it) and its chat template, with
// weights from models/llama/randmodel. The text it generates is gibberish;
// the point is a file a user could have downloaded, so that loading, memory,
// the context length, the TUI, the server and the speed can be tried on a
// 1B-class model without the download.
//
// usage: go run ./scripts/bigmodel -out DIR [-vocab FILE] [-type f16|f32|q8_0]
//
// It writes DIR/llama3.2-1b-random-TYPE.gguf (F16: 2.5 GB, about 20 s and
// 3.5 GB of memory). Make the other types with chat convert:
//
//	chat convert DIR/llama3.2-1b-random-f16.gguf DIR/llama3.2-1b-random-q8_0.gguf --type q8_0
//	chat convert DIR/llama3.2-1b-random-f16.gguf DIR/llama3.2-1b-random-q4_k_m.gguf --type q4_k
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"chat/models/gguf"
	"chat/models/llama/randmodel"
)

func main() {
	out := flag.String("out", "", "folder for the .gguf file (required)")
	vocabPath := flag.String("vocab", "../shared/models/vocab/ggml-vocab-llama-bpe.gguf", "the Llama 3 vocabulary file")
	typ := flag.String("type", "f16", "the 2-D weights' type: f16, f32 or q8_0")
	// tokenizer_config.json's chat_template of meta-llama/Llama-3.2-1B-Instruct
	// (Hugging Face), which convert_hf_to_gguf copies into
	// tokenizer.chat_template; session/chattmpl's tests render the same file.
	tmplPath := flag.String("template", "session/chattmpl/testdata/llama-3.2-instruct.jinja", "the chat template (run from the repository's root)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	path, err := run(*out, *vocabPath, *typ, *tmplPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bigmodel:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

func run(out, vocabPath, typ, tmplPath string) (string, error) {
	tmpl, err := os.ReadFile(tmplPath)
	if err != nil {
		return "", err
	}
	t, ok := map[string]gguf.Type{"f16": gguf.TypeF16, "f32": gguf.TypeF32, "q8_0": gguf.TypeQ8_0}[typ]
	if !ok {
		return "", fmt.Errorf("-type %q: f16, f32 or q8_0", typ)
	}
	vocab, err := gguf.Open(vocabPath)
	if err != nil {
		return "", err
	}
	defer vocab.Close()
	const eot = 128009 // <|eot_id|>: eos_token of the Instruct tokenizer_config.json
	if toks, ok := vocab.Strings("tokenizer.ggml.tokens"); !ok || len(toks) != 128256 || toks[eot] != "<|eot_id|>" {
		return "", fmt.Errorf("%s is not the Llama 3 vocabulary (128256 tokens, %d <|eot_id|>)", vocabPath, eot)
	}
	var tok []gguf.KV
	for _, kv := range vocab.KV {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		if kv.Key == "tokenizer.ggml.eos_token_id" {
			kv.Value = uint32(eot)
		}
		tok = append(tok, kv)
	}
	tok = append(tok, gguf.KV{Key: "tokenizer.chat_template", Type: gguf.String, Value: string(tmpl)})

	// config.json of meta-llama/Llama-3.2-1B-Instruct.
	s := randmodel.Spec{
		Name: "llama3.2-1b-random-" + typ, GeneralName: "Llama 3.2 1B Instruct (random weights)",
		Arch: "llama", Tokens: tok,
		Dim: 2048, Layers: 16, FFN: 8192, Heads: 32, KVHeads: 8, HeadDim: 64,
		Context: 131072, Eps: 1e-5,
		RopeBase: 500000, Llama3Freqs: true,
		Llama3: randmodel.Llama3Rope{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192},
		Tied:   true, Type: t, Seed: 32,
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(out, s.Name+".gguf")
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return "", err
	}
	err = randmodel.Write(f, s, nil)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		os.Remove(path + ".tmp")
		return "", err
	}
	return path, nil
}
