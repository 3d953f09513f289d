package gguf

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeSplit writes tensors t0..t(n-1) (4 floats each, value i) as a
// model split in parts, as gguf-split does; edit may change a part's
// metadata and tensors before it is written.
func writeSplit(t *testing.T, dir string, n, parts int, edit func(part int, meta *[]KV, ts *[]WriteTensor)) []string {
	t.Helper()
	var paths []string
	for p := range parts {
		var meta []KV
		if p == 0 {
			meta = append(meta, KV{"general.architecture", String, "llama"}, KV{"general.name", String, "split test"})
		}
		meta = append(meta, KV{"split.no", Uint16, uint16(p)}, KV{"split.count", Uint16, uint16(parts)},
			KV{"split.tensors.count", Int32, int32(n)})
		var ts []WriteTensor
		for i := p; i < n; i += parts {
			ts = append(ts, WriteTensor{Name: fmt.Sprintf("t%d", i), Dims: []int64{4}, Type: TypeF32, Data: []float32{float32(i), 1, 2, 3}})
		}
		if edit != nil {
			edit(p, &meta, &ts)
		}
		path := filepath.Join(dir, fmt.Sprintf("m-%05d-of-%05d.gguf", p+1, parts))
		out, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(out, meta, ts); err != nil {
			t.Fatal(err)
		}
		out.Close()
		paths = append(paths, path)
	}
	return paths
}

// A model split by gguf-split opens from any of its parts, with the first
// part's metadata and every part's tensors.
func TestSplitOpens(t *testing.T) {
	paths := writeSplit(t, t.TempDir(), 7, 3, nil)
	for _, path := range paths {
		f, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		if name, _ := f.String("general.name"); name != "split test" || len(f.Tensors) != 7 {
			t.Errorf("%s: name %q, %d tensors; want the first part's metadata and 7", filepath.Base(path), name, len(f.Tensors))
		}
		for i := range 7 {
			x, err := f.TensorFloat32(fmt.Sprintf("t%d", i))
			if err != nil || !slices.Equal(x, []float32{float32(i), 1, 2, 3}) {
				t.Errorf("t%d: %v %v", i, x, err)
			}
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

// Each way a split model can be incomplete or inconsistent is one line
// naming what is wrong, and every part opened is closed.
func TestSplitBad(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(part int, meta *[]KV, ts *[]WriteTensor)
		rm   int // part to delete (from 1), 0 none
		want string
	}{
		{"missing part", nil, 2, "part 2 of 3 of the split model m is missing"},
		{"part number", func(p int, meta *[]KV, _ *[]WriteTensor) {
			if p == 2 {
				(*meta)[0].Value = uint16(1)
			}
		}, 0, "says it is part 2 of 3, want part 3 of 3"},
		{"count", func(p int, meta *[]KV, _ *[]WriteTensor) {
			if p == 1 {
				(*meta)[1].Value = uint16(4)
			}
		}, 0, "says it is part 2 of 4, want part 2 of 3"},
		{"duplicate", func(p int, _ *[]KV, ts *[]WriteTensor) {
			if p == 1 {
				(*ts)[0].Name = "t0"
			}
		}, 0, `tensor "t0" is in two parts`},
		{"tensor count", func(p int, _ *[]KV, ts *[]WriteTensor) {
			if p == 2 {
				*ts = (*ts)[:1]
			}
		}, 0, "hold 6 tensors, but split.tensors.count says 7"},
		{"no split.no", func(p int, meta *[]KV, _ *[]WriteTensor) {
			if p == 0 {
				(*meta)[2].Key = "split.nr"
			}
		}, 0, "has no split.no from 0 to 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			paths := writeSplit(t, t.TempDir(), 7, 3, c.edit)
			if c.rm > 0 {
				os.Remove(paths[c.rm-1])
			}
			_, err := Open(paths[0])
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v; want one line with %q", err, c.want)
			}
		})
	}
	// A part renamed: its name no longer says which part it is.
	paths := writeSplit(t, t.TempDir(), 7, 3, nil)
	renamed := filepath.Join(filepath.Dir(paths[0]), "model.gguf")
	os.Rename(paths[0], renamed)
	if _, err := Open(renamed); err == nil || !strings.Contains(err.Error(), "does not end in -00001-of-00003.gguf") {
		t.Errorf("renamed part: %v", err)
	}
}

func TestModelName(t *testing.T) {
	for path, want := range map[string]string{
		"/m/qwen2.5-7b-instruct-q8_0-00001-of-00003.gguf": "qwen2.5-7b-instruct-q8_0",
		"/m/qwen2.5-7b-instruct-q8_0-00003-of-00003.gguf": "qwen2.5-7b-instruct-q8_0",
		"student.gguf": "student", "a-1-of-2.gguf": "a-1-of-2", "-00001-of-00002.gguf": "-00001-of-00002",
	} {
		if got := ModelName(path); got != want {
			t.Errorf("ModelName(%s) = %q, want %q", path, got, want)
		}
	}
}

// The parts of a split model share the bound on the memory of the header's
// strings and arrays: each part had its own, so N parts of sparse files
// could take N times it.
func TestSplitValueMemoryShared(t *testing.T) {
	saved := maxValueMemory
	t.Cleanup(func() { maxValueMemory = saved })
	maxValueMemory = 1 << 20
	big := KV{"big", String, strings.Repeat("x", 600<<10)}
	paths := writeSplit(t, t.TempDir(), 3, 2, func(_ int, meta *[]KV, _ *[]WriteTensor) { *meta = append(*meta, big) })
	for _, path := range paths {
		if f, err := Open(path); err == nil || !strings.Contains(err.Error(), "in memory") {
			if f != nil {
				f.Close()
			}
			t.Errorf("%s: %v, want the second part's strings refused by the memory the first took", filepath.Base(path), err)
		}
	}
}
