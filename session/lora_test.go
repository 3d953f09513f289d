package session

import (
	"strings"
	"testing"

	"chat/engine/sampler"
	"chat/models"
	"chat/models/lora"
)

// TestLoraToggle: adapters given at start are on; /lora lists them, /lora 1
// switches one off (the next reply is the base model's, after a
// re-prefill), /lora on brings it back; with int8 weights the adapter is
// merged into them as they are quantized, and going back to f32 keeps it.
func TestLoraToggle(t *testing.T) {
	m := embedded(t)
	reply := func(s *Session) string {
		t.Helper()
		if err := s.Send("Once upon a time"); err != nil {
			t.Fatal(err)
		}
		return s.Wait().Text
	}
	plain := reply(greedy(t, m, "raw", 24))

	ad, err := lora.Random(m, 4, 0.15, 9)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(m, Options{Settings: testSettings("raw", 24, sampler.Params{Greedy: true}), Adapters: []*lora.Adapter{ad},
		Open: func(string) (models.Model, error) { return embedded(t), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	adapted := reply(s)
	if adapted == plain {
		t.Fatalf("the adapter changed nothing: %q", plain)
	}
	out, err := s.Submit("/lora")
	if err != nil || !strings.Contains(out, "1. "+ad.Name+"  on") {
		t.Fatalf("/lora: %q %v", out, err)
	}
	if _, err := s.Submit("/lora 1"); err != nil {
		t.Fatal(err)
	}
	s.msgs = nil
	if got := reply(s); got != plain {
		t.Fatalf("adapter off: %q, want the base model's %q", got, plain)
	}
	if _, err := s.Submit("/lora on"); err != nil {
		t.Fatal(err)
	}
	s.msgs = nil
	if got := reply(s); got != adapted {
		t.Fatalf("adapter on again: %q, want %q", got, adapted)
	}
	if _, err := s.Submit("/lora 7"); err == nil {
		t.Fatal("/lora 7 with one adapter")
	}
	if err := s.SetQuant("int8"); err != nil {
		t.Fatal(err)
	}
	s.msgs = nil
	if got := reply(s); got == plain {
		t.Fatalf("int8 with the adapter gives the base text %q", got)
	}
	if err := s.SetQuant("f32"); err != nil {
		t.Fatal(err)
	}
	s.msgs = nil
	if got := reply(s); got != adapted {
		t.Fatalf("back to f32: %q, want %q", got, adapted)
	}
}
