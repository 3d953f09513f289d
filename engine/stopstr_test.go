package engine

import (
	"strings"
	"testing"

	"chat/models"
)

// The matcher holds back a tail that may begin a stop string, lets it out
// when the next piece shows it does not, and cuts the text before the
// first stop string reached, even across pieces.
func TestStopTextCut(t *testing.T) {
	for _, c := range []struct {
		stops  []string
		pieces []string
		emit   string // text emitted before the end
		hit    bool
	}{
		{[]string{"END"}, []string{"abc E", "N", "D more"}, "abc ", true},
		{[]string{"END"}, []string{"abc E", "N", "x"}, "abc ENx", false},
		{[]string{"\n\n", "User:"}, []string{"hi\n", "Us", "er: no"}, "hi\n", true},
		{[]string{"aab"}, []string{"aaa", "ab"}, "aa", true},
		{[]string{"é"}, []string{"\xc3", "\xa9"}, "", true},
		{[]string{"xyz"}, []string{"abc"}, "abc", false},
	} {
		st := newStopText(c.stops)
		var out strings.Builder
		hit := false
		for _, p := range c.pieces {
			b := []byte(p)
			if st.cut(&b) {
				hit = true
			}
			out.Write(b)
			if hit {
				break
			}
		}
		if hit != c.hit || out.String() != c.emit {
			t.Errorf("%q over %q: emitted %q hit %v; want %q %v", c.stops, c.pieces, out.String(), hit, c.emit, c.hit)
		}
		if !hit {
			rest := st.flush(nil)
			if out.String()+string(rest) != strings.Join(c.pieces, "") {
				t.Errorf("%q over %q: flush lost text", c.stops, c.pieces)
			}
		}
	}
	if newStopText([]string{""}) != nil {
		t.Error("an empty stop string must not stop at once")
	}
}

// A reply stops where a stop string appears in its text; the text (polled,
// OnText and Result.Text alike) ends just before it.
func TestStopStringEndsReply(t *testing.T) {
	m := newFake(models.WindowHalf, testCtx)
	e := New(m)
	defer e.Close()
	p := knobs["greedy"]
	free := run(t, e, Request{Prompt: prompt(5, 0), MaxTokens: 30, Sampler: p})
	text := free.Text
	if len(text) < 12 {
		t.Fatalf("reply too short to test: %q", text)
	}
	stop := text[6:9]
	want := text[:strings.Index(text, stop)]
	var streamed strings.Builder
	res := run(t, e, Request{Prompt: prompt(5, 0), MaxTokens: 30, Sampler: p, Stop: []string{"never there", stop},
		OnText: func(s string) { streamed.WriteString(s) }})
	if res.Reason != ReasonStopString || res.Text != want || streamed.String() != want {
		t.Fatalf("reason %q text %q streamed %q; want %q before %q", res.Reason, res.Text, streamed.String(), want, stop)
	}
	// Without a match the text is whole, held-back bytes included.
	res = run(t, e, Request{Prompt: prompt(5, 0), MaxTokens: 30, Sampler: p, Stop: []string{text[len(text)-1:] + "\x00"}})
	if res.Reason != ReasonLength || res.Text != text {
		t.Fatalf("no match: reason %q text %q, want %q", res.Reason, res.Text, text)
	}
}

// Options.Context caps the window.
func TestContextCap(t *testing.T) {
	e := NewWithOptions(newFake(models.WindowHalf, testCtx), Options{Context: 8})
	defer e.Close()
	if e.Window() != 8 {
		t.Fatalf("window %d, want 8", e.Window())
	}
	res := run(t, e, Request{Prompt: prompt(5, 0), MaxTokens: 20, Sampler: knobs["greedy"]})
	if res.Stats.KVCap != 8 || res.Stats.KVUsed > 8 {
		t.Fatalf("KV %d/%d", res.Stats.KVUsed, res.Stats.KVCap)
	}
}

// windowedFake is a models.Windowed: it records the windows it is asked
// for and answers with a model of its own.
type windowedFake struct {
	*fakeModel
	asked []int
	runs  *fakeModel
}

func (m *windowedFake) ForWindow(n int) models.Model {
	m.asked = append(m.asked, n)
	return m.runs
}

// The engine asks a models.Windowed model for its window (a GGUF model
// with LongRoPE then takes the factors of that window: --ctx-size past the
// original context gets the long ones) and runs the model it answers.
func TestWindowReachesModel(t *testing.T) {
	for _, ask := range []int{0, 2 * testCtx} {
		m := &windowedFake{fakeModel: newFake(models.WindowHalf, testCtx), runs: newFake(models.WindowHalf, testCtx)}
		m.Meta.TrainContext = 4 * testCtx
		e := NewWithOptions(m, Options{Context: ask})
		if len(m.asked) != 1 || m.asked[0] != e.Window() {
			t.Errorf("Context %d: the model was asked for windows %v, the engine's is %d", ask, m.asked, e.Window())
		}
		if e.Model() != models.Model(m.runs) {
			t.Errorf("Context %d: the engine runs another model than ForWindow's", ask)
		}
		run(t, e, Request{Prompt: prompt(4, 0), MaxTokens: 4, Sampler: knobs["greedy"]})
		e.Close()
	}
}

// Options.Context may open the window past the model's default context up
// to the context it was trained for (models.Info.TrainContext), and no
// further; without it the default applies.
func TestContextBeyondDefault(t *testing.T) {
	m := newFake(models.WindowHalf, testCtx)
	m.Meta.TrainContext = 4 * testCtx
	for _, c := range []struct{ ask, want int }{{0, testCtx}, {8, 8}, {2 * testCtx, 2 * testCtx}, {100 * testCtx, 4 * testCtx}} {
		e := NewWithOptions(m, Options{Context: c.ask})
		if e.Window() != c.want {
			t.Errorf("Context %d: window %d, want %d", c.ask, e.Window(), c.want)
		}
		if c.ask == 2*testCtx {
			res := run(t, e, Request{Prompt: prompt(testCtx+4, 0), MaxTokens: 8, Sampler: knobs["greedy"]})
			// The last id drawn is not fed: 7 of the 8 are cached.
			if res.Stats.KVCap != 2*testCtx || res.Stats.KVUsed != testCtx+4+7 {
				t.Errorf("KV %d/%d, want %d/%d", res.Stats.KVUsed, res.Stats.KVCap, testCtx+11, 2*testCtx)
			}
		}
		e.Close()
	}
}
