package chattmpl

import (
	"os"
	"testing"
)

func TestProbe(t *testing.T) {
	src := os.Getenv("PROBE")
	j, err := compileJinja(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := j.execute([]Message{{"user", "  a<b>&'\"é\n  "}, {"assistant", "x"}}, true, "", "", fixedNow)
	if len(got) > 300 {
		got = got[:300]
	}
	t.Logf("%q %v", got, err)
}
