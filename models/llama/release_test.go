package llama

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/kvcache"
)

// mappedRSS is the resident kB of path's mappings in /proc/self/smaps.
func mappedRSS(t *testing.T, path string) (kb int, found bool) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		// A mapping's first line: "start-end perms offset dev inode [path]".
		if fields := strings.Fields(line); len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && fields[5] == path
			found = found || in
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			kb += n
		}
	}
	return kb, found
}

// TestLoadReleasesMapping: once the model is built, the file mapping's
// pages it read are not kept resident in the process (its weights are
// copies, or are paged in again on use), so the RSS counts a model's
// weights once: Llama 3.2 1B Q8_0 showed 3.1 GB for 1.3 GB of weights.
func TestLoadReleasesMapping(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/smaps")
	}
	path := writeTiny(t, gguf.TypeQ8_0, false, "llama", "")
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	kb, found := mappedRSS(t, path)
	if !found {
		t.Fatalf("no mapping of %s in /proc/self/smaps", path)
	}
	if kb != 0 {
		t.Errorf("%d kB of the file mapping resident after Load, want 0", kb)
	}
	// The model still runs: what is read from the mapping comes back.
	if _, err := kvcache.NewState(m).Forward([]int{1, 260, 5}, 1); err != nil {
		t.Fatal(err)
	}
}
