//go:build amd64 && !purego

#include "textflag.h"

// The int8 peak probe (dotpeak.go): steps (a multiple of 16) multiply-adds
// of the 64 unsigned bytes at a by the 64 signed bytes at b, into 16 int32
// lanes (lane l: bytes 4l..4l+3), with enough independent sums that the
// loop runs at the instructions' throughput, not their latency.

// func int8DotsVNNI(a *uint8, b *int8, steps int, sums *[16]int32)
// One VPDPBUSD per step; sums Z0-Z15.
TEXT ·int8DotsVNNI(SB), NOSPLIT, $0-32
	MOVQ      a+0(FP), AX
	MOVQ      b+8(FP), BX
	MOVQ      steps+16(FP), CX
	MOVQ      sums+24(FP), DX
	VMOVDQU64 (AX), Z30
	VMOVDQU64 (BX), Z31
	VPXORD    Z0, Z0, Z0
	VPXORD    Z1, Z1, Z1
	VPXORD    Z2, Z2, Z2
	VPXORD    Z3, Z3, Z3
	VPXORD    Z4, Z4, Z4
	VPXORD    Z5, Z5, Z5
	VPXORD    Z6, Z6, Z6
	VPXORD    Z7, Z7, Z7
	VPXORD    Z8, Z8, Z8
	VPXORD    Z9, Z9, Z9
	VPXORD    Z10, Z10, Z10
	VPXORD    Z11, Z11, Z11
	VPXORD    Z12, Z12, Z12
	VPXORD    Z13, Z13, Z13
	VPXORD    Z14, Z14, Z14
	VPXORD    Z15, Z15, Z15
	SHRQ      $4, CX

vnni_loop:
	VPDPBUSD Z31, Z30, Z0
	VPDPBUSD Z31, Z30, Z1
	VPDPBUSD Z31, Z30, Z2
	VPDPBUSD Z31, Z30, Z3
	VPDPBUSD Z31, Z30, Z4
	VPDPBUSD Z31, Z30, Z5
	VPDPBUSD Z31, Z30, Z6
	VPDPBUSD Z31, Z30, Z7
	VPDPBUSD Z31, Z30, Z8
	VPDPBUSD Z31, Z30, Z9
	VPDPBUSD Z31, Z30, Z10
	VPDPBUSD Z31, Z30, Z11
	VPDPBUSD Z31, Z30, Z12
	VPDPBUSD Z31, Z30, Z13
	VPDPBUSD Z31, Z30, Z14
	VPDPBUSD Z31, Z30, Z15
	DECQ     CX
	JNZ      vnni_loop
	VPADDD Z8, Z0, Z0
	VPADDD Z9, Z1, Z1
	VPADDD Z10, Z2, Z2
	VPADDD Z11, Z3, Z3
	VPADDD Z12, Z4, Z4
	VPADDD Z13, Z5, Z5
	VPADDD Z14, Z6, Z6
	VPADDD Z15, Z7, Z7
	VPADDD Z4, Z0, Z0
	VPADDD Z5, Z1, Z1
	VPADDD Z6, Z2, Z2
	VPADDD Z7, Z3, Z3
	VPADDD Z2, Z0, Z0
	VPADDD Z3, Z1, Z1
	VPADDD Z1, Z0, Z0
	VMOVDQU32 Z0, (DX)
	VZEROUPPER
	RET

// func int8DotsAVX2(a *uint8, b *int8, steps int, sums *[16]int32)
// A step is two halves of 32 bytes (lanes 0-7, 8-15), each VPMADDUBSW (byte
// products summed in pairs to int16), VPMADDWD by ones (pairs to int32) and
// VPADDD, as the AVX2 integer kernels do; four steps a pass, sums Y0-Y7.
TEXT ·int8DotsAVX2(SB), NOSPLIT, $0-32
	MOVQ       a+0(FP), AX
	MOVQ       b+8(FP), BX
	MOVQ       steps+16(FP), CX
	MOVQ       sums+24(FP), DX
	VMOVDQU    (AX), Y12
	VMOVDQU    32(AX), Y13
	VMOVDQU    (BX), Y14
	VMOVDQU    32(BX), Y15
	VPCMPEQW   Y11, Y11, Y11
	VPSRLW     $15, Y11, Y11
	VPXOR      Y0, Y0, Y0
	VPXOR      Y1, Y1, Y1
	VPXOR      Y2, Y2, Y2
	VPXOR      Y3, Y3, Y3
	VPXOR      Y4, Y4, Y4
	VPXOR      Y5, Y5, Y5
	VPXOR      Y6, Y6, Y6
	VPXOR      Y7, Y7, Y7
	SHRQ       $2, CX

avx2_loop:
	VPMADDUBSW Y14, Y12, Y8
	VPMADDWD   Y11, Y8, Y8
	VPADDD     Y8, Y0, Y0
	VPMADDUBSW Y15, Y13, Y9
	VPMADDWD   Y11, Y9, Y9
	VPADDD     Y9, Y1, Y1
	VPMADDUBSW Y14, Y12, Y8
	VPMADDWD   Y11, Y8, Y8
	VPADDD     Y8, Y2, Y2
	VPMADDUBSW Y15, Y13, Y9
	VPMADDWD   Y11, Y9, Y9
	VPADDD     Y9, Y3, Y3
	VPMADDUBSW Y14, Y12, Y8
	VPMADDWD   Y11, Y8, Y8
	VPADDD     Y8, Y4, Y4
	VPMADDUBSW Y15, Y13, Y9
	VPMADDWD   Y11, Y9, Y9
	VPADDD     Y9, Y5, Y5
	VPMADDUBSW Y14, Y12, Y8
	VPMADDWD   Y11, Y8, Y8
	VPADDD     Y8, Y6, Y6
	VPMADDUBSW Y15, Y13, Y9
	VPMADDWD   Y11, Y9, Y9
	VPADDD     Y9, Y7, Y7
	DECQ       CX
	JNZ        avx2_loop
	VPADDD     Y2, Y0, Y0
	VPADDD     Y6, Y4, Y4
	VPADDD     Y4, Y0, Y0
	VPADDD     Y3, Y1, Y1
	VPADDD     Y7, Y5, Y5
	VPADDD     Y5, Y1, Y1
	VMOVDQU    Y0, (DX)
	VMOVDQU    Y1, 32(DX)
	VZEROUPPER
	RET
