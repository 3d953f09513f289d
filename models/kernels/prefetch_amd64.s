//go:build amd64 && !purego

#include "textflag.h"

// func prefetchLines(p unsafe.Pointer, n int)
// PREFETCHT0 on every 64-byte line that holds a byte of p[0:n]. A hint:
// it never faults, so a line past the end is harmless.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	ADDQ SI, CX              // end
	ANDQ $-64, SI            // the first line

pf_loop:
	CMPQ       SI, CX
	JGE        pf_done
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	JMP        pf_loop

pf_done:
	RET
