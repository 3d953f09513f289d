//go:build amd64 && !purego

#include "textflag.h"

// F16-weight twins of matVecAVX2 and matMul4x3AVX2 (halfmv_amd64.h holds
// their bodies): VCVTPH2PS widens 8 halves exactly.
#define WIDEN(M, Y) VCVTPH2PS M, Y
#define MATVEC ·matVecF16AVX2
#define MATMUL4X3 ·matMul4x3F16AVX2
#define WIDEN512(M, Z) VCVTPH2PS M, Z
#define MATVECIL512 ·matVecILF16AVX512
#define MATVECILAVX2 ·matVecILF16AVX2
#define WIDENIL ·widenILF16AVX2

#include "halfmv_amd64.h"
