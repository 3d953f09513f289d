package llama

import (
	"os"
	"strings"
	"testing"
)

// README.md's list of GGUF architectures names every one Load takes.
func TestReadmeArchitectures(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, models, ok := strings.Cut(string(b), "\n### Models\n")
	models, _, ok2 := strings.Cut(models, "\n### ")
	if !ok || !ok2 {
		t.Fatal("README.md lost its ### Models section")
	}
	for arch := range architectures {
		if !strings.Contains(models, "`"+arch+"`") {
			t.Errorf("README's ### Models does not name the architecture %s", arch)
		}
	}
}
