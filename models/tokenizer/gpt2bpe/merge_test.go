package gpt2bpe

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// allocPerMerge is the bytes newMergeTable allocates per merge, and its
// error.
func allocPerMerge(merges []string, ids map[string]int) (uint64, error) {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	_, err := newMergeTable(merges, ids)
	runtime.ReadMemStats(&b)
	return (b.TotalAlloc - a.TotalAlloc) / uint64(len(merges)), err
}

// Merges of strings that are no tokens once took 300 bytes each, over ten
// times their size in the file (4M of them 1.1 GB): they are refused after
// a bounded number, while merges of tokens stay small.
func TestMergeMemory(t *testing.T) {
	ids := map[string]int{}
	for b := range 256 {
		ids[string(byteRune[b])] = b
	}
	merges := make([]string, 300_000)
	for i := range merges {
		merges[i] = fmt.Sprintf("a%d b%d", i, i)
	}
	per, err := allocPerMerge(merges, ids)
	t.Logf("no-token merges: %d bytes each, %v", per, err)
	if err == nil || !strings.Contains(err.Error(), "not tokens") {
		t.Errorf("newMergeTable = %v, want the merges refused", err)
	}
	if per > 64 {
		t.Errorf("newMergeTable took %d bytes per merge of strings that are no tokens, want at most 64", per)
	}

	// One merge 300,000 times: the first is kept, and nothing is made
	// for the rest (room was made for a rank each, 28 bytes).
	for i := range merges {
		merges[i] = "a b"
	}
	if per, err = allocPerMerge(merges, ids); err != nil || per > 1 {
		t.Errorf("newMergeTable took %d bytes per repeat of one merge (error %v), want nothing", per, err)
	}

	// Every pair of the 256 characters, each making a two-character token.
	merges = merges[:0]
	for l := range 256 {
		for r := range 256 {
			a, b := string(byteRune[l]), string(byteRune[r])
			merges = append(merges, a+" "+b)
			ids[a+b] = len(ids)
		}
	}
	per, err = allocPerMerge(merges, ids)
	t.Logf("token merges: %d bytes each", per)
	if err != nil || per > 64 {
		t.Errorf("newMergeTable took %d bytes per merge of tokens (error %v), want at most 64", per, err)
	}
}
