package gguf

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"

	"chat/models/quote"
)

// Split models: llama.cpp's gguf-split (tools/gguf-split) writes a large
// model as NAME-00001-of-00003.gguf, NAME-00002-of-00003.gguf, ..., each a
// GGUF file of its own holding some of the tensors. The first part holds
// every metadata key; each part says split.no (from 0), split.count and
// split.tensors.count (the whole model's). llama.cpp's loader takes the
// first part's path and finds the others by that name (llama_split_path,
// llama_split_prefix in src/llama.cpp); here any part's path will do, as a
// user may pick any of the files.

// maxSplits bounds split.count (a uint16 in the format).
const maxSplits = 1<<16 - 1

// splitOf is f's split.no and split.count; count 0 for a whole file.
func splitOf(f *File) (no, count int, err error) {
	n, ok := f.Uint("split.count")
	if !ok || n <= 1 {
		return 0, 0, nil
	}
	if n > maxSplits {
		return 0, 0, fmt.Errorf("gguf: split.count %d is above %d", n, maxSplits)
	}
	i, ok := f.Uint("split.no")
	if !ok || i >= n {
		return 0, 0, fmt.Errorf("gguf: a part of a model split in %d parts has no split.no from 0 to %d", n, n-1)
	}
	return int(i), int(n), nil
}

// splitPath is the path of part i (from 0) of count, as gguf-split names it.
func splitPath(prefix string, i, count int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, i+1, count)
}

// openSplit returns f, opened from path, with the other parts of its model
// when it is a part of a split model; f is closed on error.
func openSplit(f *File, path string, mem *int64) (*File, error) {
	no, count, err := splitOf(f)
	if err != nil || count == 0 {
		if err != nil {
			f.Close()
			err = fmt.Errorf("%w (in %s)", err, path)
		}
		return f, err
	}
	suffix := splitPath("", no, count)
	prefix, ok := strings.CutSuffix(path, suffix)
	if !ok || prefix == "" {
		f.Close()
		return nil, fmt.Errorf("gguf: %s is part %d of a model split in %d, but its name does not end in %s as gguf-split names the parts: rename the parts back",
			path, no+1, count, suffix)
	}
	first := f
	if no != 0 {
		f.Close()
		if first, err = openPart(prefix, 0, count, mem); err != nil {
			return nil, err
		}
	}
	for i := 1; i < count; i++ {
		p, err := openPart(prefix, i, count, mem)
		if err == nil {
			err = first.addPart(p, i)
		}
		if err != nil {
			first.Close()
			return nil, err
		}
	}
	if want, ok := first.Int("split.tensors.count"); ok && want != int64(len(first.Tensors)) {
		first.Close()
		return nil, fmt.Errorf("gguf: the %d parts of %s hold %d tensors, but split.tensors.count says %d", count, filepath.Base(prefix), len(first.Tensors), want)
	}
	return first, nil
}

// openPart opens part i of count and checks that it says so.
func openPart(prefix string, i, count int, mem *int64) (*File, error) {
	path := splitPath(prefix, i, count)
	p, err := openOne(path, mem)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("gguf: part %d of %d of the split model %s is missing: %s (every part must be in the same folder)", i+1, count, filepath.Base(prefix), path)
	}
	if err != nil {
		return nil, err
	}
	no, n, err := splitOf(p)
	if err == nil && (no != i || n != count) {
		err = fmt.Errorf("gguf: %s says it is part %d of %d, want part %d of %d", path, no+1, max(n, 1), i+1, count)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// addPart takes p's tensors into f's list, as part i.
func (f *File) addPart(p *File, i int) error {
	f.parts = append(f.parts, p)
	for _, t := range p.Tensors {
		if _, dup := f.tensorIndex[t.Name]; dup {
			return fmt.Errorf("gguf: tensor %s is in two parts of the split model (part %d)", quote.Quote(t.Name), i+1)
		}
		t.part = i
		f.tensorIndex[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	return nil
}

// splitSuffix is gguf-split's part number in a file name.
var splitSuffix = regexp.MustCompile(`-[0-9]{5}-of-[0-9]{5}$`)

// ModelName is the model's name from its file's path: the file name
// without its extension, or a split model's without the part number
// (qwen2.5-7b-instruct-q8_0-00001-of-00003.gguf: qwen2.5-7b-instruct-q8_0).
func ModelName(path string) string {
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if s := splitSuffix.ReplaceAllString(name, ""); s != "" {
		return s
	}
	return name
}

// Parts is how many files the model was read from: 1, or a split model's
// split.count.
func (f *File) Parts() int { return 1 + len(f.parts) }
