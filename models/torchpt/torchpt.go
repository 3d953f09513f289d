// Package torchpt reads PyTorch checkpoints written by torch.save (the zip
// format of PyTorch 1.6 and later, including 2.x) without Python.
//
// The pickle inside is decoded by a restricted unpickler that only knows a
// small allow list of globals (OrderedDict, the tensor rebuild functions,
// storage types, TorchVersion, numpy scalars ...) and executes nothing.
// Only the storages behind the returned model tensors are read from the zip;
// optimizer state is parsed as an object graph and then dropped.
package torchpt

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"chat/models/quote"
	"chat/models/regular"
)

// Tensor is one materialised tensor, row-major. Tensors that view the same
// storage (tied weights such as token_embed.weight and lm_head.weight) may
// share their slice, so treat the data as read-only.
type Tensor struct {
	DType string    // "float32", "float16", "bfloat16", "float64", "int64", ... as stored
	Shape []int     // empty for a scalar
	F32   []float32 // floating dtypes, converted to float32
	I64   []int64   // integer and bool dtypes
}

// Numel is the number of elements the shape describes.
func (t *Tensor) Numel() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Checkpoint is what a torch.save training checkpoint holds, in Go terms.
type Checkpoint struct {
	// Tensors is the model state dict: `model_state_dict` if present, else
	// the top-level dict when it is itself a state dict. The prefixes
	// `module.`, `_orig_mod.` and `transformer.` (a reward model's backbone,
	// which the course's chat loader strips) are stripped (repeatedly, in
	// any order) and keys ending in `.tril` are dropped.
	Tensors map[string]*Tensor
	// Config is `cfg`, else `config`, else an empty map, as the course's
	// `ckpt.get("cfg") or ckpt.get("config") or {}`: an empty or None cfg
	// falls through to config. Values are plain Go: map[string]any, []any,
	// string, int64, float64, bool and nil.
	Config map[string]any
	// ConfigKey is the entry Config came from: "cfg" (post-training),
	// "config" (the trainer) or "" (none).
	ConfigKey string
	// Payload holds the other top-level entries, converted like Config. The
	// state dict, the optimizer state and the entry used for Config are left
	// out; scalar (one-element) tensors become numbers, other tensors are
	// left out.
	Payload map[string]any
}

// Keys returns the tensor names, sorted.
func (c *Checkpoint) Keys() []string {
	keys := make([]string, 0, len(c.Tensors))
	for k := range c.Tensors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Open reads the checkpoint at path.
func Open(path string) (*Checkpoint, error) {
	f, fi, err := regular.Open(path)
	if err != nil {
		return nil, fmt.Errorf("torchpt: %w", err)
	}
	defer f.Close()
	return Read(f, fi.Size(), path)
}

// Read reads a checkpoint of size bytes from r; name is used in messages.
func Read(r io.ReaderAt, size int64, name string) (*Checkpoint, error) {
	c, err := read(r, size, name)
	if err != nil {
		return nil, fmt.Errorf("torchpt: %s: %w", name, err)
	}
	return c, nil
}

// maxPickle bounds data.pkl: unpickling builds up to ~150 bytes of objects
// per pickle byte, and a compressed entry could claim any size.
const maxPickle = 2 << 20

// archive is an opened torch zip.
type archive struct {
	files     map[string]*zip.File
	prefix    string // folder holding data.pkl, with trailing slash (or "")
	bigEndian bool
	size      int64
}

func read(r io.ReaderAt, size int64, name string) (*Checkpoint, error) {
	if size < 0 {
		return nil, errors.New("negative size")
	}
	if err := sniff(r, size); err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fmt.Errorf("not a readable PyTorch zip checkpoint (%v); the file may be truncated or corrupt", err)
	}
	a, pkl, err := openArchive(zr, size)
	if err != nil {
		return nil, err
	}
	root, err := unpickle(pkl)
	if err != nil {
		return nil, err
	}
	return assemble(a, root)
}

// sniff gives a clear message for files that are not zips at all.
func sniff(r io.ReaderAt, size int64) error {
	head := make([]byte, min(size, 16))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return fmt.Errorf("read: %w", err)
	}
	if size == 0 {
		return errors.New("empty file, not a PyTorch checkpoint")
	}
	if bytes.HasPrefix(head, []byte("PK")) {
		return nil
	}
	what := ""
	switch {
	case bytes.HasPrefix(head, []byte("GGUF")):
		what = "looks like a GGUF file; use a .gguf name"
	case bytes.HasPrefix(head, []byte{0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19}):
		what = "a legacy pre-1.6 torch.save file; re-save it with a newer PyTorch (torch.save writes zips since 1.6)"
	case len(head) > 0 && head[0] == 0x80:
		what = "a bare pickle; re-save it with torch.save"
	case len(head) >= 9 && head[8] == '{':
		what = "looks like a safetensors file; use a .safetensors name"
	case bytes.HasPrefix(head, []byte("\x89HDF")):
		what = "looks like an HDF5 file"
	case bytes.HasPrefix(head, []byte("\x1f\x8b")):
		what = "a gzip file"
	default:
		what = "unknown format"
	}
	shown := head
	if len(shown) > 4 {
		shown = shown[:4]
	}
	return fmt.Errorf("not a PyTorch zip checkpoint (starts with %q: %s)", shown, what)
}

func openArchive(zr *zip.Reader, size int64) (*archive, []byte, error) {
	a := &archive{files: make(map[string]*zip.File, len(zr.File)), size: size}
	var pkls []string
	for _, f := range zr.File {
		a.files[f.Name] = f
		if f.Name == "data.pkl" || strings.HasSuffix(f.Name, "/data.pkl") {
			pkls = append(pkls, f.Name)
		}
	}
	switch len(pkls) {
	case 0:
		return nil, nil, fmt.Errorf("zip has no data.pkl: not a torch.save checkpoint")
	case 1:
	default:
		return nil, nil, fmt.Errorf("zip has %d data.pkl entries (%s, %s, ...); cannot tell which one is the checkpoint", len(pkls), quote.Quote(pkls[0]), quote.Quote(pkls[1]))
	}
	a.prefix = strings.TrimSuffix(pkls[0], "data.pkl")
	if _, ok := a.files[a.prefix+"constants.pkl"]; ok {
		return nil, nil, fmt.Errorf("a TorchScript archive (torch.jit.save), not a torch.save checkpoint; save the model's state_dict with torch.save")
	}
	if f, ok := a.files[a.prefix+"byteorder"]; ok {
		b, err := a.readEntry(f, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("byteorder: %w", err)
		}
		switch strings.TrimSpace(string(b)) {
		case "little":
		case "big":
			a.bigEndian = true
		default:
			return nil, nil, fmt.Errorf("unknown byteorder %s", quote.Quote(string(b)))
		}
	}
	if n, err := a.entrySize(a.files[pkls[0]]); err != nil {
		return nil, nil, err
	} else if n > maxPickle {
		return nil, nil, fmt.Errorf("%s is %d bytes; a checkpoint's pickle may take at most %d (a course checkpoint's takes about 65 KB)", quote.Quote(pkls[0]), n, maxPickle)
	}
	pkl, err := a.readEntry(a.files[pkls[0]], -1)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", quote.Quote(pkls[0]), err)
	}
	return a, pkl, nil
}

// readEntry reads a whole zip entry, or at most limit bytes (limit >= 0).
// The size a corrupt header claims is checked against the file size before
// anything is allocated.
func (a *archive) readEntry(f *zip.File, limit int64) ([]byte, error) {
	n, err := a.entrySize(f)
	if err != nil {
		return nil, err
	}
	if limit >= 0 && n > limit {
		n = limit
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc, buf); err != nil {
		return nil, fmt.Errorf("reading %d bytes: %w (the file may be truncated)", n, err)
	}
	if limit < 0 {
		// One more read reaches EOF, where archive/zip checks the CRC-32.
		if _, err := rc.Read(make([]byte, 1)); err != nil && err != io.EOF {
			return nil, fmt.Errorf("%w (the file is corrupt)", err)
		}
	}
	return buf, nil
}

// entrySize is the plausible uncompressed size of an entry.
func (a *archive) entrySize(f *zip.File) (int64, error) {
	u := f.UncompressedSize64
	c := f.CompressedSize64
	switch f.Method {
	case zip.Store:
		if u != c {
			return 0, fmt.Errorf("entry %s: stored sizes disagree (%d vs %d)", quote.Quote(f.Name), u, c)
		}
	case zip.Deflate:
		// Deflate cannot expand more than ~1032:1.
		if c > uint64(a.size) || u/1032 > c+1 {
			return 0, fmt.Errorf("entry %s: implausible size %d", quote.Quote(f.Name), u)
		}
	default:
		return 0, fmt.Errorf("entry %s: unsupported zip compression method %d", quote.Quote(f.Name), f.Method)
	}
	if c > uint64(a.size) {
		return 0, fmt.Errorf("entry %s: size %d exceeds the file size %d (truncated file?)", quote.Quote(f.Name), c, a.size)
	}
	return int64(u), nil
}

// assemble turns the unpickled object graph into a Checkpoint.
func assemble(a *archive, root any) (*Checkpoint, error) {
	top, ok := root.(*pyDict)
	if !ok {
		return nil, fmt.Errorf("top-level object is %s, not a dict", typeName(root))
	}
	ld := &loader{a: a, cache: map[string]*decoded{}}
	conv := newConverter(ld)
	c := &Checkpoint{Tensors: map[string]*Tensor{}, Config: map[string]any{}, Payload: map[string]any{}}

	var sd *pyDict
	sdKey := ""
	if v, ok := top.get("model_state_dict"); ok {
		d, ok := v.(*pyDict)
		if !ok {
			return nil, fmt.Errorf("model_state_dict is %s, not a dict", typeName(v))
		}
		sd, sdKey = d, "model_state_dict"
	} else if isStateDict(top) {
		sd = top
	} else {
		return nil, fmt.Errorf("no model weights: no model_state_dict and the top-level dict is not a state dict (keys: %s)", keyList(top))
	}

	for i, k := range sd.keys {
		name, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("state dict key %s is not a string", short(k))
		}
		tr, ok := sd.vals[i].(*tensorRef)
		if !ok {
			continue // e.g. _extra_state: not a weight
		}
		name = stripPrefixes(name)
		if strings.HasSuffix(name, ".tril") || name == "tril" {
			continue
		}
		t, err := ld.tensor(tr)
		if err != nil {
			return nil, fmt.Errorf("tensor %s: %w", quote.Quote(name), err)
		}
		c.Tensors[name] = t
	}
	if len(c.Tensors) == 0 {
		return nil, errors.New("the state dict holds no tensors")
	}

	if sd == top {
		return c, nil
	}
	cfgKey := ""
	for _, k := range []string{"cfg", "config"} {
		if v, ok := top.get(k); ok && v != nil {
			if d, ok := v.(*pyDict); !ok || len(d.keys) == 0 {
				continue // empty or not a config dict; it stays in Payload
			}
			cv, err := conv.plain(v, 0)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			c.Config, cfgKey = cv.(map[string]any), k
			c.ConfigKey = k
			break
		}
	}
	for i, k := range top.keys {
		ks, ok := k.(string)
		if !ok {
			ks = fmt.Sprint(plainKey(k))
		}
		if ks == sdKey || ks == cfgKey || ks == "optimizer_state_dict" || ks == "optimizer" {
			continue
		}
		v := top.vals[i]
		if tr, ok := v.(*tensorRef); ok && !isScalar(tr) {
			continue
		}
		pv, err := conv.plain(v, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", quote.Quote(ks), err)
		}
		c.Payload[ks] = pv
	}
	return c, nil
}

func isStateDict(d *pyDict) bool {
	if len(d.keys) == 0 {
		return false
	}
	for i, k := range d.keys {
		if _, ok := k.(string); !ok {
			return false
		}
		if _, ok := d.vals[i].(*tensorRef); !ok {
			return false
		}
	}
	return true
}

func keyList(d *pyDict) string {
	var parts []string
	for i, k := range d.keys {
		if i == 8 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, quote.Quote(fmt.Sprint(plainKey(k))))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func stripPrefixes(name string) string {
	for {
		switch {
		case strings.HasPrefix(name, "module."):
			name = name[len("module."):]
		case strings.HasPrefix(name, "_orig_mod."):
			name = name[len("_orig_mod."):]
		case strings.HasPrefix(name, "transformer."):
			name = name[len("transformer."):]
		default:
			return name
		}
	}
}
