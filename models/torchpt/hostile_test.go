package torchpt

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"strings"
	"testing"

	"chat/models/testmodels"
)

// zeroBomb is a zip of a data.pkl declaring one float32 storage of numel
// elements and a data/0 entry of that many zero bytes ×4, deflated (about
// 1 MB per GiB) unless stored is set; with pklBomb, data.pkl itself is
// instead a deflated entry of that many bytes.
func zeroBomb(t testing.TB, numel int64, pklBomb bool) []byte {
	w := newPW()
	w.op('}', '(').str("w").tensor("FloatStorage", "0", "cpu", 1, 0, []int{1}, []int{1})
	if numel > 1 {
		w = newPW()
		w.op('}', '(').str("w")
		w.global("torch._utils", "_rebuild_tensor_v2").op('(', '(').str("storage").global("torch", "FloatStorage").str("0").str("cpu")
		w.op('\x8a', 8)
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(numel))
		w.Write(n[:])
		w.op('t', 'Q').int(0).ints(1).ints(1).op(0x89).global("collections", "OrderedDict").op(')', 'R', 't', 'R')
	}
	w.op('u', '.')
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	if pklBomb {
		addZeros(t, zw, "archive/data.pkl", numel)
	} else {
		fw, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/data.pkl", Method: zip.Store})
		fw.Write(w.Bytes())
		addZeros(t, zw, "archive/data/0", 4*numel)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// addZeros adds a deflated entry of n zero bytes (n a multiple of 1 MiB)
// without compressing n bytes: one flushed deflate block of 1 MiB of zeros
// is repeated (its back-references only ever copy zeros), then a final
// empty block ends the stream.
func addZeros(t testing.TB, zw *zip.Writer, name string, n int64) {
	const mib = 1 << 20
	zero := make([]byte, mib)
	var blk bytes.Buffer
	fw, _ := flate.NewWriter(&blk, flate.BestCompression)
	fw.Write(zero)
	fw.Flush()
	var body bytes.Buffer
	crc := uint32(0)
	for i := int64(0); i < n/mib; i++ {
		body.Write(blk.Bytes())
		crc = crc32.Update(crc, crc32.IEEETable, zero)
	}
	body.Write([]byte{1, 0, 0, 0xff, 0xff}) // final stored block of length 0
	w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: crc,
		CompressedSize64: uint64(body.Len()), UncompressedSize64: uint64(n)})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(body.Bytes())
}

// Issue 16: compressed entries cannot make a small file allocate gigabytes.
func TestHostileCompressedEntries(t *testing.T) {
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"deflated 1 GiB storage", zeroBomb(t, 1<<28, false), "compressed"},
		{"deflated 1 GiB data.pkl", zeroBomb(t, 1<<30, true), "at most"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.file) > 8<<20 {
				t.Fatalf("the bomb is %d bytes; it should be small", len(c.file))
			}
			err := testmodels.Bounded(t, c.name, func() error {
				_, err := Read(bytes.NewReader(c.file), int64(len(c.file)), "bomb.pt")
				return err
			})
			wantErr(t, err, c.want)
		})
	}
}

// A storage whose element count is the largest int64 is refused with
// sizes that make sense (the message once said "need -4 bytes").
func TestHugeNumelMessage(t *testing.T) {
	w := newPW()
	w.op('}', '(').str("w")
	w.global("torch._utils", "_rebuild_tensor_v2").op('(', '(').str("storage").global("torch", "FloatStorage").str("0").str("cpu")
	w.op('\x8a', 8)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], math.MaxInt64)
	w.Write(n[:])
	w.op('t', 'Q').int(0).ints(1).ints(1).op(0x89).global("collections", "OrderedDict").op(')', 'R', 't', 'R', 'u', '.')
	z := makeZip(t, entry{"archive/data.pkl", w.Bytes()}, entry{"archive/data/0", make([]byte, 16)})
	_, err := readBytes(t, z, "numel.pt")
	wantErr(t, err, "too few for 9223372036854775807 float32 elements")
	if strings.Contains(err.Error(), "-") {
		t.Errorf("negative number in %q", err)
	}
}

// Pickles at the size limit made of the opcodes that allocate the most per
// byte stay within the limits.
func TestLargePicklesWithinLimits(t *testing.T) {
	for name, unit := range map[string]string{"dicts": "}", "memo": "}\x94"} {
		body := strings.Repeat(unit, (maxPickle-64)/len(unit))
		pkl := append([]byte{0x80, 2, '}', '('}, body...)
		z := makeZip(t, entry{"archive/data.pkl", pkl})
		testmodels.Bounded(t, name, func() error {
			_, err := Read(bytes.NewReader(z), int64(len(z)), "big.pt")
			return err
		})
	}
}

// addZeros makes a valid stream: inflating it gives n zeros.
func TestAddZeros(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	addZeros(t, zw, "z", 3<<20)
	zw.Close()
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := zr.File[0].Open()
	b, err := io.ReadAll(rc)
	if err != nil || len(b) != 3<<20 || bytes.Count(b, []byte{0}) != len(b) {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
}

// hostilePickles seed FuzzPickle with small forms of the hostile inputs.
var hostilePickles = []struct {
	name string
	pkl  []byte
}{
	{"reduce", newPW().global("os", "system").str("echo pwned").op(0x85, 'R', '.').Bytes()},
	{"dicts", append(append([]byte{0x80, 2}, bytes.Repeat([]byte("}"), 512)...), '.')},
	{"deep", append(append([]byte{0x80, 2}, bytes.Repeat([]byte("]"), 300)...), append(bytes.Repeat([]byte("a"), 299), '.')...)},
	{"self list", []byte("\x80\x02]q\x00h\x00a.")},
	{"long claim", []byte("\x80\x02X\xff\xff\xff\x7fabc.")},
	{"long int", []byte("\x80\x02\x8b\xff\xff\xff\x7f\x01.")},
	{"escape in global", newPW().global("os\x1b[31m", "system\x9b2J").str("x").op(0x85, 'R', '.').Bytes()},
}
