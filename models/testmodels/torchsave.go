package testmodels

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sort"
	"testing"
)

// PT is a tensor for TorchSave: float32 (F32) or int8 (I8) values, row-major.
// The same *PT under two names is one storage, as a tied weight is.
type PT struct {
	Shape []int
	F32   []float32
	I8    []int8
}

// StateDict is a model's state dict (an OrderedDict of tensors).
type StateDict map[string]*PT

// TorchSave writes payload to path as the course's torch.save does: a zip
// of stored entries under an archive folder, a protocol 2 pickle in
// data.pkl, each storage in data/<key>. Payload values may be string, int,
// int64, float64, bool, nil, []any, map[string]any, StateDict and *PT; keys
// are written sorted.
func TorchSave(t testing.TB, path string, payload map[string]any) {
	t.Helper()
	w := &pickler{keys: map[*PT]string{}}
	w.buf.Write([]byte{0x80, 2})
	if err := w.value(payload); err != nil {
		t.Fatal(err)
	}
	w.buf.WriteByte('.')

	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	add := func(name string, data []byte) {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: "archive/" + name, Method: zip.Store})
		if err == nil {
			_, err = f.Write(data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	add("data.pkl", w.buf.Bytes())
	for i, data := range w.storages {
		add(fmt.Sprintf("data/%d", i), data)
	}
	add("version", []byte("3\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, zbuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

type pickler struct {
	buf      bytes.Buffer
	keys     map[*PT]string
	storages [][]byte
}

func (w *pickler) str(s string) {
	w.buf.WriteByte('X')
	binary.Write(&w.buf, binary.LittleEndian, uint32(len(s)))
	w.buf.WriteString(s)
}

func (w *pickler) int(n int64) {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		w.buf.WriteByte('J')
		binary.Write(&w.buf, binary.LittleEndian, int32(n))
		return
	}
	w.buf.Write([]byte{0x8a, 8})
	binary.Write(&w.buf, binary.LittleEndian, n)
}

func (w *pickler) global(module, name string) {
	w.buf.WriteString("c" + module + "\n" + name + "\n")
}

func (w *pickler) tuple(xs []int) {
	w.buf.WriteByte('(')
	for _, x := range xs {
		w.int(int64(x))
	}
	w.buf.WriteByte('t')
}

func (w *pickler) value(v any) error {
	switch v := v.(type) {
	case nil:
		w.buf.WriteByte('N')
	case bool:
		if v {
			w.buf.WriteByte(0x88)
		} else {
			w.buf.WriteByte(0x89)
		}
	case int:
		w.int(int64(v))
	case int64:
		w.int(v)
	case float64:
		w.buf.WriteByte('G')
		binary.Write(&w.buf, binary.BigEndian, math.Float64bits(v))
	case string:
		w.str(v)
	case []any:
		w.buf.WriteString("](")
		for _, x := range v {
			if err := w.value(x); err != nil {
				return err
			}
		}
		w.buf.WriteByte('e')
	case map[string]any:
		w.buf.WriteString("}(")
		for _, k := range sortedKeys(v) {
			w.str(k)
			if err := w.value(v[k]); err != nil {
				return err
			}
		}
		w.buf.WriteByte('u')
	case StateDict:
		w.global("collections", "OrderedDict")
		w.buf.WriteString(")R(")
		for _, k := range sortedKeys(v) {
			w.str(k)
			if err := w.value(v[k]); err != nil {
				return err
			}
		}
		w.buf.WriteByte('u')
	case *PT:
		return w.tensor(v)
	default:
		return fmt.Errorf("TorchSave: cannot pickle %T", v)
	}
	return nil
}

// tensor writes _rebuild_tensor_v2(('storage', torch.<Type>Storage, key,
// 'cpu', numel), 0, size, stride, False, OrderedDict()).
func (w *pickler) tensor(t *PT) error {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	stype := "FloatStorage"
	if t.I8 != nil {
		stype = "CharStorage"
	}
	if t.F32 != nil && len(t.F32) != n || t.I8 != nil && len(t.I8) != n || (t.F32 == nil) == (t.I8 == nil) {
		return fmt.Errorf("TorchSave: a tensor of shape %v needs %d float32 or int8 values", t.Shape, n)
	}
	key, ok := w.keys[t]
	if !ok {
		var data bytes.Buffer
		if t.I8 != nil {
			binary.Write(&data, binary.LittleEndian, t.I8)
		} else {
			binary.Write(&data, binary.LittleEndian, t.F32)
		}
		key = fmt.Sprint(len(w.storages))
		w.keys[t] = key
		w.storages = append(w.storages, data.Bytes())
	}
	stride := make([]int, len(t.Shape))
	s := 1
	for i := len(t.Shape) - 1; i >= 0; i-- {
		stride[i] = s
		s *= t.Shape[i]
	}
	w.global("torch._utils", "_rebuild_tensor_v2")
	w.buf.WriteString("((")
	w.str("storage")
	w.global("torch", stype)
	w.str(key)
	w.str("cpu")
	w.int(int64(n))
	w.buf.WriteString("tQ")
	w.int(0)
	w.tuple(t.Shape)
	w.tuple(stride)
	w.buf.WriteByte(0x89)
	w.global("collections", "OrderedDict")
	w.buf.WriteString(")Rt")
	w.buf.WriteByte('R')
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
