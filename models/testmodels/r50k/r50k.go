// Package r50k gives tests tiktoken's r50k_base rank file without a
// download: its ranks are GPT-2's ids, so it is rebuilt from the shared
// GPT-2 vocabulary as tiktoken's dump_tiktoken_bpe writes it ("base64 rank"
// lines), which gives the very file tiktoken checks by sha256.
package r50k

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/testmodels"
	"chat/models/tokenizer/gpt2bpe"
)

// URL is where tiktoken downloads r50k_base; its cache names the file by
// this URL's sha1.
const URL = "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken"

// File returns r50k_base.tiktoken and GPT-2's merges.
func File(t testing.TB) ([]byte, []string) {
	t.Helper()
	f, err := gguf.Open(testmodels.Path(t, "vocab/ggml-vocab-gpt-2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := gpt2bpe.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for id := range 50256 {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString(tok.TokenBytes(id)), id)
	}
	merges, _ := f.Strings("tokenizer.ggml.merges")
	return []byte(b.String()), merges
}

// Cache puts the file in a new tiktoken cache under tiktoken's key, points
// TIKTOKEN_CACHE_DIR at it for the test, and returns the file's path.
func Cache(t testing.TB) string {
	t.Helper()
	file, _ := File(t)
	dir := t.TempDir()
	t.Setenv("TIKTOKEN_CACHE_DIR", dir)
	key := sha1.Sum([]byte(URL))
	path := filepath.Join(dir, hex.EncodeToString(key[:]))
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
