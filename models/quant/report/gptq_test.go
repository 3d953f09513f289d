package report

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"chat/models/course"
	"chat/models/testmodels"
)

// TestGPTQStudent is chat quant-report's GPTQ row on student.pt (16
// windows of the held-out text after its first nn.CalibTokens tokens, which
// calibrate): it fails if GPTQ's quality falls below what it reaches now
// (BENCHMARKS.md: top-1 97.7 %, cosine 0.99990). Issue 13's target, top-1
// ≥ 98.5 % with the loss within 0.5 % of float32, is met for the loss only.
func TestGPTQStudent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs student.pt over 16 windows for two formats")
	}
	path := testmodels.Path(t, "course/student.pt")
	textFile := filepath.Join(testmodels.Dir(t), "text", "TinyStories-valid-head.txt")
	text, err := os.ReadFile(textFile)
	if err != nil {
		t.Skipf("held-out text %s: %v", textFile, err)
	}
	m, err := course.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Report(m, string(text), Options{Formats: []string{"int4-g32-gptq"}, CalibText: string(text), CalibHeldOut: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", tab.Text())
	f32, _ := tab.Row("f32")
	g, ok := tab.Row("int4-g32-gptq")
	if !ok {
		t.Fatal("no GPTQ row")
	}
	if g.Top1 < 0.975 || g.MeanCosine < 0.99988 {
		t.Errorf("GPTQ top-1 %.2f %%, cosine %.6f; want >= 97.5 %% and >= 0.99988", 100*g.Top1, g.MeanCosine)
	}
	if d := math.Abs(g.Loss-f32.Loss) / f32.Loss; d > 0.005 {
		t.Errorf("GPTQ loss %.4f, f32 %.4f: %.2f %% apart, want <= 0.5 %%", g.Loss, f32.Loss, 100*d)
	}
}
