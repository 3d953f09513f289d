package kvcache

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strings"

	"chat/models/quote"
)

// The KV file format, version 2. Every integer is little-endian; floats are
// IEEE-754 float32, little-endian. A file is a header, then the blocks of one
// sequence in table order, then a trailer:
//
//	header
//	  0   8 bytes  magic "CHATKV\x00\x1a"
//	  8   u32      version, 2 (version 1 files, float32 rows only, are read too)
//	  12  u32      identity length I (1..4096)
//	  16  I bytes  model identity (UTF-8; the engine writes name, arch, format,
//	               quant and sizes), compared byte for byte on import
//	  +0  u32      layers L
//	  +4  u32      key floats per position and layer, KD
//	  +8  u32      value floats per position and layer, VD
//	  +12 u32      positions per block, BS
//	  +16 u32      positions (= tokens) T, 1..2^24
//	  +20 u32      how keys are stored, KF: 0 float32, 1 int8, 2 fp8 (E4M3),
//	               3 int4, 4 f16 (Format; not in version 1)
//	  +24 u32      how values are stored, VF (not in version 1)
//	  +28 u32      KV heads H, whose slices a quantized row's scales cover
//	               (not in version 1)
//	  +…  T × u32  the token id of each position
//	  +…  u32      CRC-32C (Castagnoli) of every header byte before it
//	block i, for i in 0..ceil(T/BS)-1
//	  u64          chained hash of the block's tokens (ChainHash of the
//	               previous block's value, 0 for the first) — partial last
//	               block included
//	  for each layer 0..L-1: the keys, then the values, each either
//	               BS×D float32 (format 0), or BS rows of codes and then BS
//	               rows of float32 scales (quantized formats, laid out as
//	               quant.go describes: D bytes and H scales a row for int8
//	               and fp8; H·⌈d/2⌉ bytes and H·⌈d/32⌉ scales for int4, d =
//	               D/H); rows at positions >= T are zeros
//	  u32          CRC-32C of the block's bytes before it
//	trailer
//	  8 bytes      "CHATKVOK", then end of file
//
// A file holds the rows exactly as the pool stores them, so a quantized cache
// round-trips bit for bit; importing needs a pool with the same formats.
// Import refuses, with an error naming the problem, a file whose magic,
// version, identity, layout, formats, block size, hashes or checksums differ
// from what it expects, one that ends early, and one with bytes after the
// trailer.
const (
	fileMagic   = "CHATKV\x00\x1a"
	fileTrailer = "CHATKVOK"
	FileVersion = 2
	maxIdentity = 4096
	maxTokens   = 1 << 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrFormat wraps every "this is not a good KV file" error from Import.
var ErrFormat = errors.New("kvcache: bad KV file")

// Export writes s and the token ids of its positions to w in format v2.
func (s *Seq) Export(w io.Writer, identity string, tokens []int) error {
	if len(tokens) != s.n || s.n == 0 {
		return fmt.Errorf("kvcache: export of %d positions with %d token ids (need the same, > 0)", s.n, len(tokens))
	}
	if len(identity) == 0 || len(identity) > maxIdentity {
		return fmt.Errorf("kvcache: model identity of %d bytes (need 1..%d)", len(identity), maxIdentity)
	}
	p := s.p
	bw := bufio.NewWriter(w)
	var hdr bytes.Buffer
	u32 := func(b *bytes.Buffer, v uint32) { b.Write(binary.LittleEndian.AppendUint32(nil, v)) }
	hdr.WriteString(fileMagic)
	u32(&hdr, FileVersion)
	u32(&hdr, uint32(len(identity)))
	hdr.WriteString(identity)
	for _, v := range []int{p.lay.Layers, p.lay.KDim, p.lay.VDim, p.bs, s.n, int(p.lay.K), int(p.lay.V), p.lay.heads()} {
		u32(&hdr, uint32(v))
	}
	for _, t := range tokens {
		u32(&hdr, uint32(t))
	}
	u32(&hdr, crc32.Checksum(hdr.Bytes(), castagnoli))
	bw.Write(hdr.Bytes())

	var h uint64
	h8 := p.lay.heads()
	kcb, kns := p.lay.K.codeBytes(p.lay.KDim, h8), p.lay.K.scales(p.lay.KDim, h8)
	vcb, vns := p.lay.V.codeBytes(p.lay.VDim, h8), p.lay.V.scales(p.lay.VDim, h8)
	buf := make([]byte, 0, 8+int(p.lay.BytesPerBlock(p.bs))+4)
	for i, b := range s.table {
		lo, hi := i*p.bs, min((i+1)*p.bs, s.n)
		h = ChainHash(h, tokens[lo:hi])
		buf = binary.LittleEndian.AppendUint64(buf[:0], h)
		rows := hi - lo
		for l := 0; l < p.lay.Layers; l++ {
			if q, sc := p.KQ(l, b); q != nil {
				buf = appendQRows(buf, q, sc, rows*kcb, rows*kns)
			} else {
				buf = appendRows(buf, p.K(l, b), rows*p.lay.KDim)
			}
			if q, sc := p.VQ(l, b); q != nil {
				buf = appendQRows(buf, q, sc, rows*vcb, rows*vns)
			} else {
				buf = appendRows(buf, p.V(l, b), rows*p.lay.VDim)
			}
		}
		buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	bw.WriteString(fileTrailer)
	return bw.Flush()
}

// appendQRows appends the first n code bytes of q and m scales of sc, each
// padded with zeros to its full length.
func appendQRows(buf []byte, q []byte, sc []float32, n, m int) []byte {
	buf = append(buf, q[:n]...)
	buf = append(buf, make([]byte, len(q)-n)...)
	return appendRows(buf, sc, m)
}

// appendRows appends the first n floats of rows, then zeros to len(rows).
func appendRows(buf []byte, rows []float32, n int) []byte {
	for i, f := range rows {
		if i >= n {
			f = 0
		}
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
	}
	return buf
}

// Import reads a file written for identity (format v1 or v2), allocates its
// blocks in p and returns them as a new sequence of at most maxPos
// positions, with the token ids of its positions. On error nothing stays
// allocated.
func (p *Pool) Import(r io.Reader, identity string, maxPos int) (*Seq, []int, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, a...))
	}
	br := bufio.NewReader(r)
	crc := crc32.New(castagnoli)
	read := func(n int, what string) ([]byte, error) {
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, bad("the file ends inside the %s (truncated)", what)
			}
			return nil, err
		}
		crc.Write(b)
		return b, nil
	}
	u32 := func(what string) (uint32, error) {
		b, err := read(4, what)
		if err != nil {
			return 0, err
		}
		return binary.LittleEndian.Uint32(b), nil
	}
	m, err := read(8, "header")
	if err != nil {
		return nil, nil, err
	}
	if string(m) != fileMagic {
		return nil, nil, bad("not a KV cache file (magic %q)", m)
	}
	ver, err := u32("header")
	if err != nil {
		return nil, nil, err
	}
	if ver != 1 && ver != FileVersion {
		return nil, nil, bad("format version %d; this program reads versions 1 and %d", ver, FileVersion)
	}
	il, err := u32("header")
	if err != nil {
		return nil, nil, err
	}
	if il == 0 || il > maxIdentity {
		return nil, nil, bad("model identity of %d bytes (corrupted header)", il)
	}
	id, err := read(int(il), "header")
	if err != nil {
		return nil, nil, err
	}
	dims := [8]uint32{5: uint32(F32), 6: uint32(F32), 7: uint32(p.lay.heads())} // version 1: float32 rows
	n := 5
	if ver >= 2 {
		n = 8
	}
	for i := range n {
		if dims[i], err = u32("header"); err != nil {
			return nil, nil, err
		}
	}
	L, KD, VD, BS, T := int(dims[0]), int(dims[1]), int(dims[2]), int(dims[3]), int(dims[4])
	KF, VF, H := Format(dims[5]), Format(dims[6]), int(dims[7])
	if T == 0 || T > maxTokens {
		return nil, nil, bad("%d positions (corrupted header)", T)
	}
	if T > maxPos {
		return nil, nil, bad("%d positions; the model holds %d", T, maxPos)
	}
	tb, err := read(4*T, "header")
	if err != nil {
		return nil, nil, err
	}
	sum := crc.Sum32()
	want, err := u32("header")
	if err != nil {
		return nil, nil, err
	}
	if want != sum {
		return nil, nil, bad("header checksum mismatch (corrupted file)")
	}
	if string(id) != identity {
		held, this := fromDiff(string(id), identity)
		return nil, nil, bad("the file was written by model %s; this is %s", quote.Quote(held), quote.Quote(this))
	}
	if L != p.lay.Layers || KD != p.lay.KDim || VD != p.lay.VDim {
		return nil, nil, bad("layout %d layers × (%d+%d) floats; the model has %d × (%d+%d)", L, KD, VD, p.lay.Layers, p.lay.KDim, p.lay.VDim)
	}
	if BS != p.bs {
		return nil, nil, bad("block size %d; the pool uses %d", BS, p.bs)
	}
	if KF != p.lay.K || VF != p.lay.V || H != p.lay.heads() {
		return nil, nil, bad("keys stored as %v and values as %v (%d heads); this cache stores %v and %v (%d heads): start with the same --kv-quant-k/--kv-quant-v", KF, VF, H, p.lay.K, p.lay.V, p.lay.heads())
	}
	tokens := make([]int, T)
	for i := range tokens {
		tokens[i] = int(binary.LittleEndian.Uint32(tb[4*i:]))
	}

	s := p.NewSeq(maxPos)
	fail := func(err error) (*Seq, []int, error) {
		s.Free()
		return nil, nil, err
	}
	var h uint64
	nb := (T + BS - 1) / BS
	for i := 0; i < nb; i++ {
		crc.Reset()
		what := fmt.Sprintf("block %d of %d", i, nb)
		hb, err := read(8, what)
		if err != nil {
			return fail(err)
		}
		lo, hi := i*BS, min((i+1)*BS, T)
		h = ChainHash(h, tokens[lo:hi])
		if binary.LittleEndian.Uint64(hb) != h {
			return fail(bad("%s: its hash does not match its tokens (corrupted file)", what))
		}
		if err := s.Append(hi - lo); err != nil {
			return fail(err)
		}
		b := s.table[i]
		floats := func(dst []float32) error {
			raw, err := read(4*len(dst), what)
			if err != nil {
				return err
			}
			for j := range dst {
				dst[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
			}
			return nil
		}
		// part reads one layer's keys or values: float32 rows, or codes
		// and their scales.
		part := func(q []byte, sc, fl []float32) error {
			if q == nil {
				return floats(fl)
			}
			raw, err := read(len(q), what)
			if err != nil {
				return err
			}
			copy(q, raw)
			return floats(sc)
		}
		for l := 0; l < L; l++ {
			kq, ks := p.KQ(l, b)
			vq, vs := p.VQ(l, b)
			if err := part(kq, ks, p.K(l, b)); err != nil {
				return fail(err)
			}
			if err := part(vq, vs, p.V(l, b)); err != nil {
				return fail(err)
			}
		}
		sum := crc.Sum32()
		want, err := u32(what)
		if err != nil {
			return fail(err)
		}
		if want != sum {
			return fail(bad("%s: checksum mismatch (corrupted file)", what))
		}
	}
	tr := make([]byte, len(fileTrailer))
	if _, err := io.ReadFull(br, tr); err != nil || string(tr) != fileTrailer {
		return fail(bad("missing trailer after the last block (truncated or corrupted file)"))
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return fail(bad("bytes after the trailer"))
	}
	return s, tokens, nil
}

// fromDiff is a and b from the field where they part (after the last space
// before it): a message shows what differs (quant=q4_k_m, quant=q8_0), not
// the long start they share.
func fromDiff(a, b string) (string, string) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	j := strings.LastIndexByte(a[:i], ' ') + 1
	return a[j:], b[j:]
}
