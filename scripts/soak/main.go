// Command soak feeds random mutants of each input family (GGUF and .pt
// models, saved sessions, config files, KV cache files) through the app's
// own loading paths and reports panics, hangs and peak memory: the check
// behind README's RELIABILITY section (issue 16). It is not part of go test;
// scripts/soak.sh runs it once per family.
//
//	go run ./scripts/soak -family gguf -n 10000 [-seed 1] [-out DIR]
//
// Each input runs on the calling goroutine with a watchdog: a panic there
// is recovered and counted, one on another goroutine ends the process (the
// input is in DIR/current, and the script reports the crash); an input
// still running after 5 s is a hang and ends the run. Peak RSS is the
// kernel's high-water mark of the process (VmHWM) after all inputs; at
// maxRSS or more the run fails.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"chat/config"
	"chat/config/settings"
	"chat/engine/sampler"
	"chat/models"
	"chat/models/embedded"
	"chat/models/gguf"
	"chat/models/kvcache"
	"chat/models/llama/randmodel"
	"chat/models/load"
	"chat/session"
	"chat/session/store"
)

const hangAfter = 5 * time.Second

func main() {
	family := flag.String("family", "", "gguf, pt, session, config or kv")
	n := flag.Int("n", 10000, "mutants to run")
	seed := flag.Uint64("seed", 1, "random seed (the same seed gives the same mutants)")
	out := flag.String("out", "", "folder for the current input and the inputs that failed (default: a temp folder)")
	shared := flag.String("shared", filepath.Join("..", "shared", "models"), "the shared models folder (seed files)")
	flag.Parse()
	if *out == "" {
		d, err := os.MkdirTemp("", "soak-"+*family+"-")
		if err != nil {
			fail(err)
		}
		*out = d
	}
	os.MkdirAll(*out, 0o755)
	work, err := os.MkdirTemp("", "soak-work-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(work)
	f, err := newFamily(*family, *shared, work)
	if err != nil {
		fail(err)
	}
	r := rand.New(rand.NewPCG(*seed, 0x50a4))
	var st stats
	start := time.Now()
	for i := 0; i < *n; i++ {
		seed := f.seeds[r.IntN(len(f.seeds))]
		var in []byte
		if f.edit != nil {
			in = f.edit(r, seed)
		} else {
			in = mutate(r, seed, f.text)
		}
		os.WriteFile(filepath.Join(*out, "current"), in, 0o644)
		st.run(i, in, f.run, *out)
	}
	rss := peakRSS()
	fmt.Printf("%s: %d inputs in %s: %d accepted, %d refused with an error, %d panics, %d hangs, slowest %s, peak RSS %d MB\n",
		*family, *n, time.Since(start).Round(time.Second), st.ok, st.refused, st.panics, 0, st.slowest.Round(time.Millisecond), rss>>20)
	if st.panics > 0 {
		os.Exit(1)
	}
	if rss >= maxRSS {
		fmt.Fprintf(os.Stderr, "soak: peak RSS %d MB is over the %d MB limit\n", rss>>20, maxRSS>>20)
		os.Exit(4)
	}
}

// maxRSS is issue 16's memory bound for the whole run of one family.
const maxRSS = 512 << 20

func fail(err error) {
	fmt.Fprintln(os.Stderr, "soak:", err)
	os.Exit(2)
}

type stats struct {
	ok, refused, panics int
	slowest             time.Duration
}

// run runs one input under the watchdog.
func (s *stats) run(i int, in []byte, fn func([]byte) error, out string) {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(hangAfter):
			name := filepath.Join(out, fmt.Sprintf("hang-%d", i))
			os.WriteFile(name, in, 0o644)
			fmt.Printf("HANG: input %d still running after %v (saved as %s)\n", i, hangAfter, name)
			os.Exit(3)
		}
	}()
	t0 := time.Now()
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				name := filepath.Join(out, fmt.Sprintf("panic-%d", i))
				os.WriteFile(name, in, 0o644)
				fmt.Printf("PANIC: input %d (saved as %s): %v\n%s\n", i, name, p, debug.Stack())
				s.panics++
				err = nil
			}
		}()
		return fn(in)
	}()
	close(done)
	s.slowest = max(s.slowest, time.Since(t0))
	if err != nil {
		s.refused++
	} else {
		s.ok++
	}
}

// peakRSS is the process's resident high-water mark in bytes.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(line[len("VmHWM:"):]), "%d", &kb)
			return kb << 10
		}
	}
	return -1
}

// family is an input family: its seed files and how one input runs.
type family struct {
	seeds [][]byte
	text  bool                                   // a text format: mutate with text edits too
	edit  func(r *rand.Rand, seed []byte) []byte // the family's own mutator (nil: mutate)
	run   func([]byte) error
}

func newFamily(name, shared, work string) (*family, error) {
	switch name {
	case "gguf", "pt":
		return modelFamily(name, shared, work)
	case "session":
		return sessionFamily(work)
	case "config":
		return configFamily(work), nil
	case "kv":
		return kvFamily()
	}
	return nil, fmt.Errorf("unknown family %q (gguf, pt, session, config, kv)", name)
}

// modelFamily loads each mutant through load.Open and, when it loads,
// chats with it for two tokens (tokenizer, chat template, forward pass).
func modelFamily(name, shared, work string) (*family, error) {
	var seeds [][]byte
	var files []string
	if name == "gguf" {
		files = []string{"stories260K/stories260K.gguf"}
		b, err := tinyGGUF()
		if err != nil {
			return nil, err
		}
		seeds = append(seeds, b)
	} else {
		files = []string{"course/tiny-gqa.pt", "course/tiny-classic.pt"}
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(shared, f))
		if err != nil {
			return nil, fmt.Errorf("seed file: %w (run from the repository next to ../shared/models, or pass -shared)", err)
		}
		seeds = append(seeds, b)
	}
	path := filepath.Join(work, "model."+name)
	f := &family{seeds: seeds}
	if name == "pt" {
		// Zip entries carry CRC-32s, so most raw edits would only meet the
		// checksum: mutate inside an entry (the pickle mostly) and zip the
		// entries again, and edit the zip itself now and then.
		f.edit = func(r *rand.Rand, seed []byte) []byte {
			if r.IntN(5) == 0 {
				return mutate(r, seed, false)
			}
			return mutateZip(r, seed)
		}
	}
	f.run = func(in []byte) error {
		if err := os.WriteFile(path, in, 0o644); err != nil {
			return err
		}
		m, err := load.Open(path)
		if err != nil {
			return err
		}
		defer func() {
			if c, ok := m.(interface{ Close() error }); ok {
				c.Close()
			}
		}()
		return chat(m, nil)
	}
	return f, nil
}

// mutateZip edits the contents of one entry of a zip (data.pkl three times
// in four), sometimes deflating it, and writes the zip again with good
// checksums.
func mutateZip(r *rand.Rand, seed []byte) []byte {
	zr, err := zip.NewReader(bytes.NewReader(seed), int64(len(seed)))
	if err != nil {
		return mutate(r, seed, false)
	}
	pick := r.IntN(len(zr.File))
	if r.IntN(4) != 0 {
		for i, f := range zr.File {
			if strings.HasSuffix(f.Name, "data.pkl") {
				pick = i
			}
		}
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for i, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return mutate(r, seed, false)
		}
		body, _ := io.ReadAll(rc)
		rc.Close()
		method := f.Method
		if i == pick {
			body = mutate(r, body, false)
			if r.IntN(10) == 0 {
				method = zip.Deflate
			}
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: method})
		if err != nil {
			return mutate(r, seed, false)
		}
		w.Write(body)
	}
	zw.Close()
	return out.Bytes()
}

// chat sends one message and waits for a two-token reply.
func chat(m models.Model, st *store.Store) error {
	v := settings.Defaults("")
	v.MaxTokens, v.Sampler, v.RandomSeed, v.KVMem = 2, sampler.Params{Greedy: true}, false, 16
	s, err := session.New(m, session.Options{Settings: v, Store: st})
	if err != nil {
		return err
	}
	defer s.Close()
	if st != nil {
		if err := s.Resume(); err != nil {
			return err
		}
	}
	if err := s.Send("Once upon a time"); err != nil {
		return err
	}
	return s.Wait().Err
}

// tinyGGUF is a one-layer random llama with a chat template, so mutants
// reach the Jinja renderer too.
func tinyGGUF() ([]byte, error) {
	toks := []string{"<unk>", "<s>", "</s>", "▁", "a", "b", "▁a", "<|im_start|>", "<|im_end|>"}
	types := []int32{2, 3, 3, 1, 1, 1, 1, 3, 3}
	var vb bytes.Buffer
	err := gguf.Write(&vb, []gguf.KV{
		{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: toks}},
		{Key: "tokenizer.ggml.scores", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Float32, Data: make([]float32, len(toks))}},
		{Key: "tokenizer.ggml.token_type", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Int32, Data: types}},
		{Key: "tokenizer.ggml.bos_token_id", Type: gguf.Uint32, Value: uint32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Type: gguf.Uint32, Value: uint32(2)},
		{Key: "tokenizer.chat_template", Type: gguf.String, Value: "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"},
	}, nil)
	if err != nil {
		return nil, err
	}
	vocab, err := gguf.Parse(vb.Bytes())
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = randmodel.Write(&b, randmodel.Spec{Name: "soak", Arch: "llama", Dim: 16, Layers: 1, FFN: 32, Heads: 2, KVHeads: 1,
		Context: 64, Eps: 1e-5, Tied: true, Type: gguf.TypeF32, Seed: 1, Std: 0.3}, vocab)
	return b.Bytes(), err
}

// sessionFamily resumes each mutant as the only saved session and
// continues it with the embedded model.
func sessionFamily(work string) (*family, error) {
	m, err := load.Embedded()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(work, "sessions")
	st := store.Open(dir)
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	r := &store.Record{Version: store.Version, ID: "20261129-100000-abcd", Name: "story", Title: "Tell me a story", Created: now, Updated: now,
		Model: store.Model{Name: embedded.Name, Identity: store.IdentityOf(embedded.Model)}, Mode: "chat", System: "Be brief.",
		MaxTokens: 50, Sampler: store.Sampler{Temperature: 0.8, TopP: 0.95, Seed: 7}}
	for i := 0; i < 3; i++ {
		r.Messages = append(r.Messages, store.Message{Role: "user", Content: "Tell me a story about a cat.", Time: now},
			store.Message{Role: "assistant", Content: "Once upon a time, there was a little cat named Tom.", Time: now})
	}
	seed, _ := json.MarshalIndent(r, "", "  ")
	path := filepath.Join(dir, r.ID+".json")
	os.MkdirAll(dir, 0o700)
	return &family{seeds: [][]byte{seed}, text: true, run: func(in []byte) error {
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o700)
		if err := os.WriteFile(path, in, 0o600); err != nil {
			return err
		}
		if _, err := st.List(); err != nil {
			return err
		}
		return chat(m, st)
	}}, nil
}

// configFamily parses each mutant as the config file.
func configFamily(work string) *family {
	seed := `# settings
model = "models/student.pt"
mode = "chat"
system = "You tell short stories."
max_tokens = 200
threads = 2
kv_mem = 64
theme = "dark"

[sampler]
greedy = false
temperature = 0.7
top_k = 40
top_p = 0.9
min_p = 0.05
repeat_penalty = 1.1
seed = 42

[keys]
send = "enter"
newline = ["alt+enter", "ctrl+j"]
temperature_up = "f3"
`
	path := filepath.Join(work, "config.toml")
	return &family{seeds: [][]byte{[]byte(seed)}, text: true, run: func(in []byte) error {
		if err := os.WriteFile(path, in, 0o600); err != nil {
			return err
		}
		c, err := config.Parse([]string{"--config", path})
		if err != nil {
			return err
		}
		return c.WriteTOML(io.Discard)
	}}
}

// kvFamily imports each mutant into a pool shaped like the file's.
func kvFamily() (*family, error) {
	lay := kvcache.Layout{Layers: 2, KDim: 8, VDim: 8}
	p, err := kvcache.NewPool(lay, 16, 64)
	if err != nil {
		return nil, err
	}
	var seeds [][]byte
	for _, n := range []int{5, 16, 40} {
		s := p.NewSeq(256)
		if err := s.Append(n); err != nil {
			return nil, err
		}
		toks := make([]int, n)
		for i := range toks {
			toks[i] = 100 + i
		}
		var b bytes.Buffer
		if err := s.Export(&b, "soak-model", toks); err != nil {
			return nil, err
		}
		s.Free()
		seeds = append(seeds, b.Bytes())
	}
	return &family{seeds: seeds, run: func(in []byte) error {
		s, _, err := p.Import(bytes.NewReader(in), "soak-model", 256)
		if err != nil {
			return err
		}
		s.Free()
		if p.Used() != 0 {
			panic(fmt.Sprintf("%d blocks leaked", p.Used()))
		}
		return nil
	}}, nil
}

// mutate returns a copy of seed with a few random edits (one in half the
// mutants, so most stay close to valid and reach past the parser): byte flips,
// interesting integers (0, -1, 2^24, 2^31, 2^63...) written over 1, 2, 4
// or 8 bytes, deletions, duplications, insertions of random bytes; text
// families also get control characters, deep brackets, huge numbers and
// long repeats.
func mutate(r *rand.Rand, seed []byte, text bool) []byte {
	b := append([]byte(nil), seed...)
	k := 1
	for k < 8 && r.IntN(2) == 0 {
		k++
	}
	for ; k > 0 && len(b) > 0; k-- {
		at := r.IntN(len(b))
		switch op := r.IntN(10); {
		case op < 3:
			b[at] ^= byte(1 << r.IntN(8))
		case op < 5:
			w := []int{1, 2, 4, 8}[r.IntN(4)]
			if at+w > len(b) {
				break
			}
			v := []uint64{0, 1, 0xff, 0xffff, 0xffffffff, 1 << 24, 1 << 31, 1 << 63, ^uint64(0), uint64(r.Uint32())}[r.IntN(10)]
			var buf [8]byte
			binary.LittleEndian.PutUint64(buf[:], v)
			copy(b[at:at+w], buf[:w])
		case op < 6:
			n := min(1+r.IntN(64), len(b)-at)
			b = append(b[:at], b[at+n:]...)
		case op < 7:
			n := min(1+r.IntN(256), len(b)-at)
			chunk := append([]byte(nil), b[at:at+n]...)
			b = append(b[:at], append(bytes.Repeat(chunk, 1+r.IntN(4)), b[at:]...)...)
		case op < 8 || !text:
			ins := make([]byte, 1+r.IntN(8))
			for i := range ins {
				ins[i] = byte(r.Uint32())
			}
			b = append(b[:at], append(ins, b[at:]...)...)
		default:
			pieces := []string{"\x1b[2J", "\u009b", "\x00", "\"", "\\", "{", "[", "]", "}", "\n", "=", ",", ":",
				"\\u0000", "\\u001b[31m", "\\u009b2J", "\\u202e", "1e400", "-1", "0", "1e9", "99999999999999999999", strings.Repeat("[", 500), strings.Repeat("a.", 200),
				strings.Repeat("x", 1<<16), "\xef\xbb\xbf", "null", "true", "[[keys]]", "version"}
			p := pieces[r.IntN(len(pieces))]
			b = append(b[:at], append([]byte(p), b[at:]...)...)
		}
	}
	return b
}
