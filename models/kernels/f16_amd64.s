//go:build amd64 && !purego

#include "textflag.h"

// The interleaved f16 kernels (halfmv_amd64.h holds their bodies):
// VCVTPH2PS widens 8 halves exactly.
#define WIDEN(M, Y) VCVTPH2PS M, Y
#define WIDEN512(M, Z) VCVTPH2PS M, Z
#define MATVECIL512 ·matVecILF16AVX512
#define MATVECILAVX2 ·matVecILF16AVX2
#define WIDENIL ·widenILF16AVX2
#define MATMULIL4X3 ·matMulIL4x3F16AVX2

#include "halfmv_amd64.h"
