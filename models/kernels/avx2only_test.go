//go:build amd64

package kernels

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAVX2KernelsUseNoAVX512 reads every *_amd64.s and checks that the
// functions named *AVX2 (and *AVXVNNI, whose VEX VPDPBUSD is written as
// bytes) use only what an AVX2 CPU has. CHAT_KERNELS=avx2
// runs them on an AVX-512 machine, where an EVEX-only instruction works, so
// the comparison tests cannot see one; on an AVX2-only CPU it faults (a
// VPBROADCASTD from a general register did, in the AVX2 interleaved tiles).
func TestAVX2KernelsUseNoAVX512(t *testing.T) {
	evex := []struct {
		what string
		re   *regexp.Regexp
	}{
		{"a zmm register", regexp.MustCompile(`\bZ\d+\b`)},
		{"a register above 15", regexp.MustCompile(`\b[XY](1[6-9]|2\d|3[01])\b`)},
		{"a mask register", regexp.MustCompile(`\bK[0-7]\b`)},
		{"an embedded broadcast", regexp.MustCompile(`\.BCST\b`)},
		{"a broadcast from a general register", regexp.MustCompile(`^VPBROADCAST[BWDQ]\s+(AX|BX|CX|DX|SI|DI|BP|R\d+)\b`)},
		{"an AVX-512-only instruction", regexp.MustCompile(`^(VPTERNLOG[DQ]|VPERMT2|VPERMI2|VPMOV[DQW][BWD]\b|VCVTUDQ2PS|VPDPBUSD|VPCOMPRESS|VPEXPAND|VEXTRACT[FI](32X4|64X4)|VINSERT[FI](32X4|64X4)|VBROADCAST[FI](32X4|64X4)|VMOVDQ[UA](32|64)|VPABSQ|VPMAXSQ|VPMINSQ|VPSRAQ|VPROL|VPROR|VFPCLASS|VGETEXP|VSCALEF|VRNDSCALE|VRCP14|VRSQRT14|KMOV|KOR|KAND)`)},
	}
	files, err := filepath.Glob("*_amd64.s")
	if err != nil || len(files) == 0 {
		t.Fatalf("no assembly files: %v", err)
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fn := ""
		for i, line := range strings.Split(string(b), "\n") {
			l := strings.TrimSpace(line)
			if c := strings.Index(l, "//"); c >= 0 {
				l = strings.TrimSpace(l[:c])
			}
			if strings.HasPrefix(l, "TEXT ") {
				fn = ""
				if name := strings.Fields(l)[1]; strings.Contains(name, "AVX2(SB)") || strings.Contains(name, "AVXVNNI(SB)") {
					fn = name
					checked++
				}
				continue
			}
			if fn == "" || l == "" {
				continue
			}
			for _, e := range evex {
				if e.re.MatchString(l) {
					t.Errorf("%s:%d: %s uses %s: %q", f, i+1, fn, e.what, l)
				}
			}
		}
	}
	if checked < 40 {
		t.Errorf("checked %d *AVX2 functions; the files have more (did the naming change?)", checked)
	}
}
