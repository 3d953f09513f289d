package torchpt

import (
	"archive/zip"
	"bytes"
	"testing"

	"chat/models/testmodels"
)

// oneShortLine fails unless err is one short line (under 300 bytes, or
// max if given) with no control characters.
func oneShortLine(t *testing.T, err error, max ...int) {
	t.Helper()
	testmodels.OneShortLine(t, err, append(max, 300)[0])
}

// TestHostileTextInMessages: strings read from a pickle (text lines, an
// encoding name, a numpy dtype code) are quoted and cut in errors.
func TestHostileTextInMessages(t *testing.T) {
	long := testmodels.HostileName(1 << 20)
	line := func(op byte, s string) []byte { return append(newPW().op(op).Bytes(), s+"\n."...) }
	cases := []struct {
		name, want string
		pkl        []byte
	}{
		{"memo index", "bad memo index", line('p', long)},
		{"FLOAT", "bad FLOAT", line('F', long)},
		{"text persistent id", "unsupported text persistent id", line('P', long)},
		{"INT", "bad integer", line('I', "1"+testmodels.HostileName(4000))},
		{"LONG", "bad integer", line('L', "1"+testmodels.HostileName(4000))},
		{"encoding", "unsupported encoding", newPW().global("_codecs", "encode").str("x").str(long).op(0x86, 'R', '.').Bytes()},
		{"numpy dtype", "numpy scalar of dtype", newPW().global("numpy.core.multiarray", "scalar").
			global("numpy", "dtype").str(long).op(0x85, 'R').str("abcd").op(0x86, 'R', '.').Bytes()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readBytes(t, wrapPickle(t, tc.pkl), "evil.pt")
			wantErr(t, err, tc.want)
			oneShortLine(t, err)
		})
	}
}

// rawZip writes entries as they are, with the sizes, method and CRC their
// headers claim.
func rawZip(t *testing.T, hs ...*zip.FileHeader) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, h := range hs {
		f, err := zw.CreateRaw(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("abc")); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestHostileEntryNames: zip entry names and storage keys are quoted and
// cut in errors. A zip entry's name holds at most 64 KB.
func TestHostileEntryNames(t *testing.T) {
	long := testmodels.HostileName(1 << 20)
	key := testmodels.HostileName(60000)
	pkl := "archive/data.pkl"
	tensor := func(key string, n int) []byte {
		return newPW().op('}').str("w").tensor("FloatStorage", key, "cpu", n, 0, []int{n}, []int{1}).op('s', '.').Bytes()
	}
	twoTypes := newPW().op('}', '(').str("w").tensor("FloatStorage", key, "cpu", 6, 0, []int{6}, []int{1}).
		str("v").tensor("IntStorage", key, "cpu", 6, 0, []int{6}, []int{1}).op('u', '.').Bytes()
	badCRC := makeZip(t, entry{key + "/data.pkl", tensor("0", 6)}, entry{key + "/data/0", make([]byte, 24)})
	badCRC[bytes.Index(badCRC, []byte("FloatStorage"))] ^= 0x20
	cases := []struct {
		name, want string
		zip        []byte
	}{
		{"missing storage", "is missing from the zip", wrapPickle(t, tensor(long, 6))},
		{"storage of two types", "is used as both", makeZip(t, entry{pkl, twoTypes}, entry{"archive/data/" + key, make([]byte, 24)})},
		{"compressed storage", "is compressed", makeZipMethod(t, zip.Deflate, entry{pkl, tensor(key, 6)}, entry{"archive/data/" + key, make([]byte, 24)})},
		{"short storage", "too few for 6 float32", makeZip(t, entry{pkl, tensor(key, 6)}, entry{"archive/data/" + key, make([]byte, 8)})},
		{"large data.pkl", "a checkpoint's pickle may take at most", makeZip(t, entry{key + "/data.pkl", make([]byte, maxPickle+1)})},
		{"corrupt data.pkl", "checksum", badCRC},
		{"stored sizes", "stored sizes disagree", rawZip(t, &zip.FileHeader{Name: key + "/data.pkl", Method: zip.Store, CompressedSize64: 3, UncompressedSize64: 5})},
		{"implausible size", "implausible size", rawZip(t, &zip.FileHeader{Name: key + "/data.pkl", Method: zip.Deflate, CompressedSize64: 3, UncompressedSize64: 1 << 40})},
		{"method", "unsupported zip compression method 99", rawZip(t, &zip.FileHeader{Name: key + "/data.pkl", Method: 99, CompressedSize64: 3, UncompressedSize64: 3})},
		{"beyond the file", "exceeds the file size", rawZip(t, &zip.FileHeader{Name: key + "/data.pkl", Method: zip.Store, CompressedSize64: 1 << 30, UncompressedSize64: 1 << 30})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readBytes(t, tc.zip, "evil.pt")
			wantErr(t, err, tc.want)
			oneShortLine(t, err)
		})
	}
	// Two names, each quoted and cut.
	_, err := readBytes(t, makeZip(t, entry{key + "/data.pkl", tensor("0", 6)}, entry{key + "x/data.pkl", tensor("0", 6)}), "evil.pt")
	wantErr(t, err, "2 data.pkl entries")
	oneShortLine(t, err, 500)
}

// TestHostileKeys: state dict and payload keys are quoted and cut in errors.
func TestHostileKeys(t *testing.T) {
	long := testmodels.HostileName(1 << 20)
	// A scalar tensor in the payload whose storage is missing fails to convert.
	badScalar := func(w *pw) *pw { return w.tensor("FloatStorage", "missing", "cpu", 1, 0, []int{}, []int{}) }
	withPayload := func(key func(w *pw) *pw) []byte {
		w := newPW().op('}', '(').str("model_state_dict").op('}').str("w").tensor("FloatStorage", "0", "cpu", 6, 0, []int{6}, []int{1}).op('s')
		return badScalar(key(w)).op('u', '.').Bytes()
	}
	cases := []struct {
		name, want string
		pkl        []byte
	}{
		{"state dict key", "tensor ", newPW().op('}').str(long).tensor("FloatStorage", "missing", "cpu", 6, 0, []int{6}, []int{1}).op('s', '.').Bytes()},
		{"payload key", "scalar tensor", withPayload(func(w *pw) *pw { return w.str(long) })},
		{"payload tuple key", "scalar tensor", withPayload(func(w *pw) *pw { return w.str(long).op(0x85) })},
		{"key list", "no model weights", newPW().op('}').str(long).int(1).op('s', '.').Bytes()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readBytes(t, wrapPickle(t, tc.pkl), "evil.pt")
			wantErr(t, err, tc.want)
			oneShortLine(t, err)
		})
	}
}

// TestHostileGlobalInMessages: a global's name is quoted and cut in the
// errors of call and persistentLoad. resolveGlobal lets only allow-listed
// names through, so the globals here are made by hand: the messages stay
// safe should the allow-list ever admit names by pattern.
func TestHostileGlobalInMessages(t *testing.T) {
	g := &global{module: testmodels.HostileName(1 << 20), name: "x"}
	u := &unpickler{}
	_, callErr := u.call(g, nil)
	_, storageErr := persistentLoad(&pyTuple{items: []any{"storage", g, "0", "cpu", int64(1)}})
	for _, err := range []error{callErr, storageErr} {
		oneShortLine(t, err)
	}
}
