package coursebpe

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"chat/models/quote"
	"chat/models/regular"
)

// tiktokenEncoding is where tiktoken (openai_public.py) gets an encoding:
// its rank file's URL and sha256, its split pattern and its special tokens
// with their ids, which follow the ranks (with gaps: ids no token has).
type tiktokenEncoding struct {
	file, url, sha256, pattern string
	specials                   map[string]int
}

// tiktokenEncodings are the encodings the course's prepare_tiny_data.py
// offers (r50k_base, its default and the post-training one, cl100k_base,
// o200k_base) and gpt2, which has r50k_base's ranks (tiktoken builds them
// from GPT-2's data-gym files) and is read from r50k_base's file.
var tiktokenEncodings = map[string]tiktokenEncoding{
	"r50k_base": r50kBase,
	"gpt2":      r50kBase,
	"cl100k_base": {
		file:    "cl100k_base.tiktoken",
		url:     "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
		sha256:  "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
		pattern: GPT4SplitPattern, // tiktoken's cl100k pattern, the same string
		specials: map[string]int{EndOfText: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
			"<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
	},
	"o200k_base": {
		file:   "o200k_base.tiktoken",
		url:    "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
		sha256: "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
		pattern: `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
			`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
			`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		specials: map[string]int{EndOfText: 199999, "<|endofprompt|>": 200018},
	},
}

var r50kBase = tiktokenEncoding{
	file:     "r50k_base.tiktoken",
	url:      "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken",
	sha256:   "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
	pattern:  GPT2SplitPattern,
	specials: map[string]int{EndOfText: 50256},
}

// maxRankFile bounds a rank file read (r50k_base's is 0.8 MiB).
const maxRankFile = 64 << 20

// tiktokenDirs are tiktoken's cache folders, where the course's Python left
// the rank files: $TIKTOKEN_CACHE_DIR or $DATA_GYM_CACHE_DIR when set, else
// its default: the user cache folder's tiktoken (tiktoken's load.py since
// its 2026 change, openai/tiktoken#564) or, before, the temp folder's
// data-gym-cache; both are tried.
func tiktokenDirs() []string {
	for _, env := range []string{"TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"} {
		if d, ok := os.LookupEnv(env); ok {
			if d == "" {
				return nil // tiktoken: caching off
			}
			return []string{d}
		}
	}
	var dirs []string
	if runtime.GOOS == "windows" {
		if d := os.Getenv("LOCALAPPDATA"); d != "" {
			dirs = append(dirs, filepath.Join(d, "tiktoken"))
		}
	} else if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		dirs = append(dirs, filepath.Join(d, "tiktoken"))
	} else if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache", "tiktoken"))
	}
	return append(dirs, filepath.Join(os.TempDir(), "data-gym-cache"))
}

// rankFilePaths are the files tried for enc, in order: in each cache
// folder, tiktoken's cache key (the sha1 of the URL; older tiktoken used an
// az:// URL) and then the file's own name.
func (enc tiktokenEncoding) rankFilePaths() []string {
	urls := []string{enc.url, "az://openaipublic/encodings/" + enc.file}
	var paths []string
	for _, d := range tiktokenDirs() {
		for _, u := range urls {
			sum := sha1.Sum([]byte(u))
			paths = append(paths, filepath.Join(d, hex.EncodeToString(sum[:])))
		}
		paths = append(paths, filepath.Join(d, enc.file))
	}
	return paths
}

// loadTiktoken reads the named encoding's rank file from tiktoken's cache,
// checked against tiktoken's sha256. It never downloads: without the file
// the error says where to put it.
func loadTiktoken(name string) (*Tokenizer, error) {
	enc, ok := tiktokenEncodings[name]
	if !ok {
		return nil, &TiktokenError{Name: name, Why: "it is not one of the encodings the course offers (r50k_base, cl100k_base, o200k_base)"}
	}
	paths := enc.rankFilePaths()
	var bad []string
	for _, p := range paths {
		b, err := readRankFile(p)
		if err != nil {
			continue
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != enc.sha256 {
			bad = append(bad, p)
			continue
		}
		return fromRanks(b, enc)
	}
	var dirs []string
	for _, d := range tiktokenDirs() {
		dirs = append(dirs, quote.Quote(d))
	}
	where := "tiktoken's cache (" + strings.Join(dirs, ", ") + ")"
	if len(paths) == 0 {
		where = "tiktoken's cache, which TIKTOKEN_CACHE_DIR=\"\" turns off"
	}
	why := fmt.Sprintf("its rank file is not in %s; run python3 -c 'import tiktoken; tiktoken.get_encoding(\"%s\")' once, or put %s (sha256 %.12s...) there", where, name, enc.file, enc.sha256)
	if len(bad) > 0 {
		why = fmt.Sprintf("%s does not have tiktoken's sha256 for %s (corrupt or another file)", quote.Quote(bad[0]), enc.file)
	}
	return nil, &TiktokenError{Name: name, Why: why}
}

func readRankFile(path string) ([]byte, error) {
	f, fi, err := regular.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > maxRankFile {
		return nil, fmt.Errorf("%s is %d bytes", path, fi.Size())
	}
	return io.ReadAll(io.LimitReader(f, maxRankFile))
}

// fromRanks builds the tokenizer of a tiktoken rank file ("base64 rank"
// lines). Ranks must be 0..n-1 with the 256 single bytes first, as in
// OpenAI's files, so the ids are the course's layout: the ranks, then the
// special tokens.
func fromRanks(b []byte, enc tiktokenEncoding) (*Tokenizer, error) {
	t := &Tokenizer{pattern: enc.pattern, byBytes: map[string]int32{}, cache: map[string][]int{}}
	for n, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		tok, rank, ok := bytes.Cut(line, []byte(" "))
		r, err := strconv.Atoi(string(rank))
		piece, err2 := base64.StdEncoding.DecodeString(string(tok))
		if !ok || err != nil || err2 != nil || r != n || len(piece) == 0 || (r < 256) != (len(piece) == 1) {
			return nil, fmt.Errorf("tokenizer: %s line %d is not rank %d of a tiktoken file", enc.file, n+1, n)
		}
		if _, dup := t.byBytes[string(piece)]; dup {
			return nil, fmt.Errorf("tokenizer: %s line %d repeats a token", enc.file, n+1)
		}
		t.byBytes[string(piece)] = int32(r)
		t.vocab = append(t.vocab, piece)
	}
	if len(t.vocab) < 256 {
		return nil, fmt.Errorf("tokenizer: %s has %d ranks, fewer than the 256 bytes", enc.file, len(t.vocab))
	}
	// The merge each rank is made by, for GGUF's merge list: the two parts
	// tiktoken's own merging reaches using only lower ranks (how llama.cpp's
	// and Hugging Face's converters read a tiktoken file).
	t.merges = make([][2]int, len(t.vocab)-256)
	for r := 256; r < len(t.vocab); r++ {
		parts := t.rankMerge(nil, string(t.vocab[r]), int32(r))
		if len(parts) != 2 {
			return nil, fmt.Errorf("tokenizer: %s rank %d is not a merge of two lower ranks", enc.file, r)
		}
		t.merges[r-256] = [2]int{parts[0], parts[1]}
	}
	// Ids no token has (cl100k_base's 100256, say) are empty specials,
	// which EncodeSpecial never matches.
	t.eot = -1
	for s, id := range enc.specials {
		j := id - len(t.vocab)
		if j < 0 || j > 1<<10 {
			return nil, fmt.Errorf("tokenizer: %s has %d ranks, so special token %s cannot be id %d", enc.file, len(t.vocab), s, id)
		}
		for len(t.specials) <= j {
			t.specials = append(t.specials, "")
		}
		t.specials[j] = s
		if s == EndOfText {
			t.eot = id
		}
	}
	var err error
	t.split, err = newSplitter(enc.pattern)
	return t, err
}

// rankMerge appends the ids of chunk as tiktoken's byte-pair merge gives
// them, using ranks below limit: a chunk that is a token is that token;
// otherwise, from its bytes, the adjacent pair whose joined bytes have the
// lowest rank (the leftmost of equals) is merged, until no pair has one. A
// heap of rank<<32|offset and a list of parts keep it O(n log n); an entry
// is stale when its pair no longer joins to that rank.
func (t *Tokenizer) rankMerge(dst []int, chunk string, limit int32) []int {
	if r, ok := t.byBytes[chunk]; ok && r < limit {
		return append(dst, int(r))
	}
	n := len(chunk)
	next := make([]int32, n) // start of the next part, n at the end
	prev := make([]int32, n) // start of the previous part, -1 at the start
	for i := range n {
		next[i], prev[i] = int32(i+1), int32(i-1)
	}
	rank := func(p int32) (int32, bool) {
		q := next[p]
		if int(q) >= n {
			return 0, false
		}
		r, ok := t.byBytes[chunk[p:next[q]]]
		return r, ok && r < limit
	}
	h := make(pairHeap, 0, n)
	for p := range int32(max(n-1, 0)) {
		if r, ok := rank(p); ok {
			h = append(h, uint64(r)<<32|uint64(p))
		}
	}
	h.init()
	dead := make([]bool, n)
	for len(h) > 0 {
		e := h.pop()
		p := int32(e & (1<<32 - 1))
		if r, ok := rank(p); dead[p] || !ok || uint64(r) != e>>32 {
			continue
		}
		q := next[p]
		dead[q] = true
		next[p] = next[q]
		if int(next[p]) < n {
			prev[next[p]] = p
		}
		if b := prev[p]; b >= 0 {
			if r, ok := rank(b); ok {
				h.push(uint64(r)<<32 | uint64(b))
			}
		}
		if r, ok := rank(p); ok {
			h.push(uint64(r)<<32 | uint64(p))
		}
	}
	for p := 0; p < n; p = int(next[p]) {
		dst = append(dst, int(t.byBytes[chunk[p:next[p]]]))
	}
	return dst
}
