package torchpt

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// pw writes pickle opcodes by hand, the way torch.save (protocol 2) does.
type pw struct{ bytes.Buffer }

func newPW() *pw {
	w := &pw{}
	w.Write([]byte{0x80, 2})
	return w
}

func (w *pw) op(ops ...byte) *pw { w.Write(ops); return w }

func (w *pw) str(s string) *pw {
	w.WriteByte('X')
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(s)))
	w.Write(n[:])
	w.WriteString(s)
	return w
}

func (w *pw) int(n int) *pw {
	switch {
	case n >= 0 && n < 256:
		w.op('K', byte(n))
	case n >= 0 && n < 65536:
		w.op('M', byte(n), byte(n>>8))
	default:
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(int32(n)))
		w.WriteByte('J')
		w.Write(b[:])
	}
	return w
}

func (w *pw) float(f float64) *pw {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], math.Float64bits(f))
	w.WriteByte('G')
	w.Write(b[:])
	return w
}

func (w *pw) global(module, name string) *pw {
	w.WriteByte('c')
	w.WriteString(module + "\n" + name + "\n")
	return w
}

func (w *pw) stackGlobal(module, name string) *pw {
	w.op(0x8c, byte(len(module)))
	w.WriteString(module)
	w.op(0x8c, byte(len(name)))
	w.WriteString(name)
	return w.op(0x93)
}

func (w *pw) ints(xs ...int) *pw {
	w.op('(')
	for _, x := range xs {
		w.int(x)
	}
	return w.op('t')
}

// tensor writes _rebuild_tensor_v2(('storage', torch.<stype>, key, loc, numel), off, size, stride, False, OrderedDict()).
func (w *pw) tensor(stype, key, loc string, numel, off int, size, stride []int) *pw {
	w.global("torch._utils", "_rebuild_tensor_v2")
	w.op('(')
	w.op('(').str("storage").global("torch", stype).str(key).str(loc).int(numel).op('t', 'Q')
	w.int(off).ints(size...).ints(stride...)
	w.op(0x89).global("collections", "OrderedDict").op(')', 'R')
	return w.op('t', 'R')
}

type entry struct {
	name string
	data []byte
}

func makeZip(t testing.TB, entries ...entry) []byte {
	return makeZipMethod(t, zip.Store, entries...)
}

func makeZipMethod(t testing.TB, method uint16, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func f32bytes(o binary.ByteOrder, xs ...float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		o.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func u16bytes(o binary.ByteOrder, xs ...uint16) []byte {
	b := make([]byte, 2*len(xs))
	for i, x := range xs {
		o.PutUint16(b[2*i:], x)
	}
	return b
}

func i64bytes(o binary.ByteOrder, xs ...int64) []byte {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		o.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

func f64bytes(o binary.ByteOrder, xs ...float64) []byte {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		o.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

// synthPickle is a small checkpoint pickle shaped like the course's, with
// every storage dtype, a tied weight, views, a .tril key, prefixes to strip,
// optimizer state whose storage is absent from the zip, and payload extras.
func synthPickle(loc string) []byte {
	w := newPW()
	w.op('}', '(')
	w.str("model_state_dict").global("collections", "OrderedDict").op(')', 'R', '(')
	w.str("module.token_embed.weight").tensor("FloatStorage", "0", loc, 6, 0, []int{2, 3}, []int{3, 1})
	w.str("_orig_mod.module._orig_mod.lm_head.weight").tensor("FloatStorage", "0", loc, 6, 0, []int{2, 3}, []int{3, 1})
	w.str("wt").tensor("FloatStorage", "0", loc, 6, 0, []int{3, 2}, []int{1, 3})
	w.str("row1").tensor("FloatStorage", "0", loc, 6, 3, []int{3}, []int{1})
	w.str("half").tensor("HalfStorage", "h", loc, 4, 0, []int{4}, []int{1})
	w.str("bf").tensor("BFloat16Storage", "bf", loc, 2, 0, []int{2}, []int{1})
	w.str("dbl").tensor("DoubleStorage", "d", loc, 1, 0, []int{}, []int{})
	w.str("pos_idxs").tensor("LongStorage", "p", loc, 4, 0, []int{4}, []int{1})
	w.str("mask").tensor("BoolStorage", "b", loc, 2, 0, []int{2}, []int{1})
	w.str("i8").tensor("CharStorage", "c", loc, 2, 0, []int{1, 2}, []int{2, 1})
	w.str("empty").tensor("FloatStorage", "0", loc, 6, 0, []int{0, 3}, []int{3, 1})
	w.str("blocks.0.attn.tril").tensor("BoolStorage", "b", loc, 2, 0, []int{2}, []int{1})
	w.op('u')
	// BUILD {'_metadata': OrderedDict()} as torch does.
	w.op('}').str("_metadata").global("collections", "OrderedDict").op(')', 'R', 's', 'b')
	// Optimizer state: parsed, never read (storage "missing" is not in the zip).
	w.str("optimizer_state_dict").op('}').str("state").op('}').int(0).op('}')
	w.str("exp_avg").tensor("FloatStorage", "missing", loc, 6, 0, []int{6}, []int{1})
	w.op('s', 's', 's')
	// config
	w.str("config").op('}', '(')
	w.str("n_embed").int(64)
	w.str("lr").float(0.002)
	w.str("arch").str("modern")
	w.str("qk_norm").op(0x89)
	w.str("window").op('N')
	w.str("neg").int(-5)
	w.str("tokenizer").op('}', '(').str("merges").op(']', '(')
	for i := 0; i < 5; i++ {
		w.op(']', '(').int(256 + i).int(i).op('e')
	}
	w.op('e').op('u')
	w.op('u')
	// payload
	w.str("stage").str("sft")
	w.str("step").int(41)
	w.str("losses").op(']', '(').float(2.5)
	w.global("numpy.core.multiarray", "scalar")
	w.global("numpy", "dtype").str("f8").op(0x89, 0x88, 0x87, 'R')
	w.op('(').int(3).str("<").op('N', 'N', 'N').int(0).int(0).int(0).op('t', 'b')
	w.global("_codecs", "encode").str("\u0000\u0000\u0000\u0000\u0000\u0000\u00e0?").str("latin1").op(0x86, 'R')
	w.op(0x86, 'R', 'e')
	w.str("pytorch_version").global("torch.torch_version", "TorchVersion").str("2.1.0").op(0x85, 0x81)
	w.str("train_loss").tensor("FloatStorage", "0", loc, 6, 2, []int{}, []int{})
	w.op('u')
	return w.op('.').Bytes()
}

// synthStorages returns the storages synthPickle refers to.
func synthStorages(o binary.ByteOrder) map[string][]byte {
	return map[string][]byte{
		"0":  f32bytes(o, 0, 1, 2, 3, 4, 5),
		"h":  u16bytes(o, 0x3c00, 0xc000, 0x3800, 0x7bff),
		"bf": u16bytes(o, 0x3f80, 0xc020),
		"d":  f64bytes(o, 3.25),
		"p":  i64bytes(o, 0, 1, 2, 3),
		"b":  {1, 0},
		"c":  {0xff, 2},
	}
}

// synthZip builds a checkpoint zip; v2 adds the PyTorch 2.x records.
func synthZip(t testing.TB, prefix string, v2, bigEndian bool, loc string) []byte {
	var o binary.ByteOrder = binary.LittleEndian
	if bigEndian {
		o = binary.BigEndian
	}
	es := []entry{{prefix + "data.pkl", synthPickle(loc)}}
	if v2 {
		order := "little"
		if bigEndian {
			order = "big"
		}
		es = append(es, entry{prefix + ".format_version", []byte("1")},
			entry{prefix + ".storage_alignment", []byte("64")},
			entry{prefix + "byteorder", []byte(order)})
	}
	st := synthStorages(o)
	for _, k := range []string{"0", "h", "bf", "d", "p", "b", "c"} {
		es = append(es, entry{prefix + "data/" + k, st[k]})
	}
	es = append(es, entry{prefix + "version", []byte("3\n")})
	if v2 {
		es = append(es, entry{prefix + ".data/serialization_id", []byte("1234567890")})
	}
	return makeZip(t, es...)
}

// wrapPickle puts a pickle into a minimal checkpoint zip with the storages
// of synthStorages and of the testdata protocol files.
func wrapPickle(t testing.TB, pkl []byte) []byte {
	es := []entry{{"archive/data.pkl", pkl}}
	st := synthStorages(binary.LittleEndian)
	st["1"] = i64bytes(binary.LittleEndian, 10, 11, 12, 13)
	for _, k := range []string{"0", "1", "h", "bf", "d", "p", "b", "c"} {
		es = append(es, entry{"archive/data/" + k, st[k]})
	}
	return makeZip(t, es...)
}
