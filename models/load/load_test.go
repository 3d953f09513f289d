package load

import (
	"testing"

	"chat/models/testmodels"
)

// The progress callback sees the whole file read by the end, for both
// formats, and the model is the same as Open's.
func TestOpenProgress(t *testing.T) {
	for _, rel := range []string{"course/tiny.pt", "stories260K/stories260K.gguf"} {
		path := testmodels.Path(t, rel)
		var calls int
		var last, total int64
		m, err := OpenProgress(path, func(done, tot int64) {
			calls++
			if done < last {
				t.Errorf("%s: progress went back from %d to %d", rel, last, done)
			}
			last, total = done, tot
		})
		if err != nil {
			t.Fatal(err)
		}
		if calls == 0 || total == 0 || last == 0 {
			t.Errorf("%s: %d calls, last %d of %d", rel, calls, last, total)
		}
		if rel == "stories260K/stories260K.gguf" && last != total {
			t.Errorf("%s: read %d of %d bytes", rel, last, total)
		}
		plain, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if m.Info() != plain.Info() {
			t.Errorf("%s: OpenProgress gives %+v, Open %+v", rel, m.Info(), plain.Info())
		}
	}
}
