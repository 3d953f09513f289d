package coursebpe

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"chat/models/testmodels"
	"chat/models/testmodels/r50k"
	"chat/models/tokenizer/gpt2bpe"
)

// TestTiktokenR50k reads r50k_base from tiktoken's cache (the file rebuilt
// from GPT-2's vocabulary has tiktoken's sha256, so it is the real one),
// under tiktoken's cache key, and runs llama.cpp's GPT-2 vectors through it:
// what tiktoken's encode_ordinary gives, GPT-2's tokenizer being the same.
// The merges it derives for GGUF are GPT-2's.
func TestTiktokenR50k(t *testing.T) {
	file, merges := r50k.File(t)
	if sum := sha256.Sum256(file); hex.EncodeToString(sum[:]) != r50kBase.sha256 {
		t.Fatalf("rebuilt r50k_base.tiktoken has sha256 %x, not tiktoken's", sum)
	}
	cached := r50k.Cache(t)
	dir := filepath.Dir(cached)
	tok, err := FromSpec(nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Size() != 50257 || tok.EOT() != 50256 || string(tok.TokenBytes(50256)) != EndOfText {
		t.Fatalf("size %d EOT %d", tok.Size(), tok.EOT())
	}
	if tok.Merges() != len(merges) {
		t.Fatalf("%d merges, GPT-2 has %d", tok.Merges(), len(merges))
	}
	for r := range merges {
		a, b := tok.Merge(r)
		if got := gpt2bpe.ByteText(tok.TokenBytes(a)) + " " + gpt2bpe.ByteText(tok.TokenBytes(b)); got != merges[r] {
			t.Fatalf("merge %d is %q, GPT-2's %q", r, got, merges[r])
		}
	}

	inp, err := os.ReadFile(testmodels.Path(t, "vocab/ggml-vocab-gpt-2.gguf.inp"))
	if err != nil {
		t.Fatal(err)
	}
	outp, err := os.ReadFile(testmodels.Path(t, "vocab/ggml-vocab-gpt-2.gguf.out"))
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	texts = texts[:len(texts)-1]
	lines := strings.Split(strings.TrimSuffix(string(outp), "\n"), "\n")
	for i, text := range texts {
		var want []int
		for _, f := range strings.Fields(lines[i]) {
			n, _ := strconv.Atoi(f)
			want = append(want, n)
		}
		if got := tok.Encode(text); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
		if got := tok.Decode(want); got != DecodeUTF8Replace([]byte(text)) {
			t.Errorf("Decode(%v) = %q, want %q", want, got, text)
		}
	}
	if got := tok.EncodeSpecial("hi<|endoftext|>"); !reflect.DeepEqual(got, []int{5303, 50256}) {
		t.Errorf("EncodeSpecial = %v", got)
	}

	// A long run of one letter stays linear: the merge is a heap.
	if ids := tok.Encode(strings.Repeat("a", 1<<16)); len(ids) == 0 {
		t.Fatal("no ids")
	}

	// A file that is not tiktoken's is named, not read.
	if err := os.WriteFile(filepath.Join(dir, "r50k_base.tiktoken"), file[:len(file)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(cached)
	_, err = FromSpec("r50k_base")
	if !errors.Is(err, ErrTiktoken) || !strings.Contains(err.Error(), "does not have tiktoken's sha256") {
		t.Errorf("corrupt file: %v", err)
	}
	testmodels.OneShortLine(t, err, 400)
}

// TestRankMergeNaive: the heap merge gives what tiktoken's loop gives (find
// the lowest-ranked joined pair, leftmost of equals, merge, repeat) on
// random chunks of repeated letters and fragments, where equal ranks meet.
func TestRankMergeNaive(t *testing.T) {
	r50k.Cache(t)
	tok, err := FromSpec("r50k_base")
	if err != nil {
		t.Fatal(err)
	}
	naive := func(chunk string) []int {
		parts := make([]string, len(chunk))
		for i := 0; i < len(chunk); i++ {
			parts[i] = chunk[i : i+1]
		}
		for {
			best, at := int32(-1), -1
			for i := 0; i+1 < len(parts); i++ {
				if r, ok := tok.byBytes[parts[i]+parts[i+1]]; ok && (at < 0 || r < best) {
					best, at = r, i
				}
			}
			if at < 0 {
				break
			}
			parts = append(parts[:at], append([]string{parts[at] + parts[at+1]}, parts[at+2:]...)...)
		}
		ids := make([]int, len(parts))
		for i, p := range parts {
			ids[i] = int(tok.byBytes[p])
		}
		return ids
	}
	frags := []string{"a", "aa", "e", "ee", " ", "th", "ing", "==", "--", "0", "00", "\xe2\x80", "\x94", "ab", "ba", "é", "!"}
	x := uint32(7)
	for range 3000 {
		var b strings.Builder
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		for range 1 + x%12 {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			b.WriteString(frags[x%uint32(len(frags))])
		}
		s := b.String()
		if got, want := tok.rankMerge(nil, s, math.MaxInt32), naive(s); !reflect.DeepEqual(got, want) {
			if _, whole := tok.byBytes[s]; !whole {
				t.Fatalf("%q: heap %v, tiktoken's loop %v", s, got, want)
			}
		}
	}
}

// TestTiktokenGaps: an encoding whose special tokens leave ids no token has
// (cl100k_base's 100256, o200k_base's 199998 and more) numbers them as
// tiktoken does; a gap is never matched nor decoded to text. The file is a
// small one of the same form, registered under its own sha256.
func TestTiktokenGaps(t *testing.T) {
	var b strings.Builder
	add := func(piece string, rank int) {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(piece)), rank)
	}
	for i := range 256 {
		add(string([]byte{byte((i + 10) % 256)}), i) // bytes out of order, as in OpenAI's files
	}
	add("ab", 256)
	add("abc", 257)
	file := []byte(b.String())
	sum := sha256.Sum256(file)
	enc := tiktokenEncoding{file: "gaps.tiktoken", url: "https://example.invalid/gaps.tiktoken", sha256: hex.EncodeToString(sum[:]),
		pattern: GPT4SplitPattern, specials: map[string]int{EndOfText: 259, "<|x|>": 262}}
	tiktokenEncodings["gaps_test"] = enc
	defer delete(tiktokenEncodings, "gaps_test")
	dir := t.TempDir()
	t.Setenv("TIKTOKEN_CACHE_DIR", dir)
	if err := os.WriteFile(filepath.Join(dir, "gaps.tiktoken"), file, 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := FromSpec(map[string]any{"type": "tiktoken", "name": "gaps_test"})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Size() != 263 || tok.EOT() != 259 || !tok.IsSpecial(258) || tok.Decode([]int{258, 260}) != "" {
		t.Fatalf("size %d EOT %d", tok.Size(), tok.EOT())
	}
	if got := tok.EncodeSpecial("abc<|x|>ab<|endoftext|>"); !reflect.DeepEqual(got, []int{257, 262, 256, 259}) {
		t.Errorf("EncodeSpecial = %v", got)
	}
	if got := tok.Decode([]int{257, 262, 259}); got != "abc<|x|><|endoftext|>" {
		t.Errorf("Decode = %q", got)
	}
	if a, c := tok.Merge(1); string(tok.TokenBytes(a)) != "ab" || string(tok.TokenBytes(c)) != "c" {
		t.Errorf("merge 1 is %q %q", tok.TokenBytes(a), tok.TokenBytes(c))
	}

	// o200k_base's pattern compiles and cuts as tiktoken's does.
	sp, err := newSplitter(tiktokenEncodings["o200k_base"].pattern)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []string
	sp("Hello World's HTTPServer 12345 ok!!\n\n x", func(c string) { chunks = append(chunks, c) })
	if want := []string{"Hello", " World's", " HTTPServer", " ", "123", "45", " ok", "!!\n\n", " x"}; !reflect.DeepEqual(chunks, want) {
		t.Errorf("o200k chunks %q, want %q", chunks, want)
	}
}
