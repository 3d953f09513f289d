//go:build linux

package kernels

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// guarded returns an n-float slice that ends exactly where an inaccessible
// page begins, so a kernel reading or writing one element too far faults.
func guarded(t *testing.T, n int) []float32 {
	t.Helper()
	page := syscall.Getpagesize()
	size := (n*4+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	all := unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), (size-page)/4)
	s := all[len(all)-n:]
	for i := range s {
		s[i] = float32(i%7) - 3
	}
	return s
}

// TestTailsStayInBounds: the masked tail loads and stores touch nothing past
// the last element of any operand.
func TestTailsStayInBounds(t *testing.T) {
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, cols := range []int{1, 3, 7, 9, 15, 17, 33, 70} {
				for _, rows := range []int{1, 3, 4, 5, 8, 9, 13} {
					for _, n := range []int{1, 3, 4} {
						w := guarded(t, rows*cols)
						x := guarded(t, n*cols)
						out := guarded(t, n*rows)
						MatMul(out, w, x, rows, cols, n)
						MatVec(out, w, x, rows, cols)
					}
				}
				a, b := guarded(t, cols), guarded(t, cols)
				Dot(a, b)
				Axpy(0.5, a, b)
			}
		})
	}
}

func guardedI8(t *testing.T, n int) []int8 {
	f := guarded(t, (n+3)/4)
	b := unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(f))), len(f)*4)
	b = b[len(b)-n:]
	for i := range b {
		b[i] = int8(i%9) - 4
	}
	return b
}

func TestInt8StayInBounds(t *testing.T) {
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, rows := range []int{1, 3, 4, 5, 9} {
				for _, cols := range []int{32, 33, 63, 64, 96, 100} {
					q, xq := guardedI8(t, rows*cols), guardedI8(t, cols)
					out, scale := guarded(t, rows), guarded(t, rows)
					MatVecI8(out, q, scale, xq, 1, rows, cols)
				}
			}
		})
	}
}

// TestBlocksStayInBounds: the block products read nothing past the last
// weight block (Q6_K's half scale is its last 2 bytes), activation or sum.
func TestBlocksStayInBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, k := range blockKinds {
				for _, rows := range []int{1, 3, 5} {
					for _, nb := range []int{1, 2} {
						cols := nb * k.bs
						src := randBlocks(rng, k, rows*nb, false)
						w := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(guardedI8(t, len(src))))), len(src))
						copy(w, src)
						xq, xd := guardedI8(t, cols), guarded(t, nb)
						xs16 := guarded(t, cols/16/2+1)
						xs := unsafe.Slice((*int16)(unsafe.Pointer(unsafe.SliceData(xs16))), len(xs16)*2)
						xs = xs[len(xs)-cols/16:]
						for i := range xd {
							xd[i] = 0.01
						}
						out := guarded(t, rows)
						k.matVec(out, w, xq, xd, xs, rows, cols)
					}
				}
			}
		})
	}
}

func TestExpStayInBounds(t *testing.T) {
	for _, asm := range impls() {
		withImpl(asm, func() {
			for n := 1; n <= 17; n++ {
				x, y := guarded(t, n), guarded(t, n)
				copy(y, x)
				softmaxExp(y, 0)
				SwiGLU(y, x)
				Softmax(x)
			}
		})
	}
}

func TestI8F32StayInBounds(t *testing.T) {
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, rows := range []int{1, 3, 4, 5, 9} {
				for _, cols := range []int{1, 5, 8, 9, 15, 16, 17, 33} {
					q, x := guardedI8(t, rows*cols), guarded(t, cols)
					out, scale := guarded(t, rows), guarded(t, rows)
					MatVecI8F32(out, q, scale, x, rows, cols)
				}
			}
		})
	}
}

// TestILStayInBounds: the interleaved products read nothing past the packed
// weights and write nothing past the last output, for full and partial row
// groups and any token count.
func TestILStayInBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(107, 108))
	for _, l := range impls() {
		withImpl(l, func() {
			for _, name := range []string{"q8_0", "q4_0", "int4-g64"} {
				for _, rows := range []int{1, 16, 17, 32} {
					for _, n := range []int{1, 3, 8, 9} {
						c := newILCase(t, rng, name, rows, 128)
						w := guardedBytes(t, len(c.w))
						copy(w, c.w)
						var gs []float32
						if c.gs != nil {
							gs = guarded(t, len(c.gs))
							copy(gs, c.gs)
						}
						x := guarded(t, n*c.cols)
						var a ILAct
						a.Quantize(x, n, c.cols, c.k)
						MatMulIL(c.k, guarded(t, n*rows), w, gs, c.g, &a, rows, c.cols, Cached)
					}
				}
			}
		})
	}
}

// TestAttnRowsI4StayInBounds: the int4 row kernels read no code byte or
// scale past a block's last row, whose last KV head ends the slices (the
// eight and four rows' scale copies and the dword code loads included).
func TestAttnRowsI4StayInBounds(t *testing.T) {
	for _, l := range impls() {
		withImpl(l, func() {
			for _, d := range []int{32, 64, 96, 256} {
				for _, n := range []int{1, 3, 4, 5, 8, 9, 17} {
					for _, hc := range [][2]int{{1, 1}, {4, 2}} {
						h, nkv := hc[0], hc[1]
						kvh := make([]int32, h)
						for i := range kvh {
							kvh[i] = int32(i / (h / nkv))
						}
						cb, ng := Int4KVHead(d)
						codes := guardedI8(t, n*nkv*cb)
						k := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(codes))), len(codes))
						scales := guarded(t, n*nkv*ng)
						q, scores := guarded(t, h*d), guarded(t, h*n)
						AttnScoresRowsI4(scores, n, q, k, nkv*cb, scales, nkv, kvh, n, 0.5)
						AttnMixRowsI4(q, scores, n, k, nkv*cb, scales, nkv, kvh, n)
					}
				}
			}
		})
	}
}
