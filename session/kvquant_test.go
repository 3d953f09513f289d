package session

import (
	"strings"
	"testing"
)

// TestSetKVQuantMidSession: /set kv_quant_k and kv_quant_v rebuild the cache
// in the new formats between turns; the conversation goes on (the next turn
// re-prefills it) and the panel's figures name the formats.
func TestSetKVQuantMidSession(t *testing.T) {
	s := greedy(t, embedded(t), "chat", 8)
	if err := s.Send("Once upon a time"); err != nil {
		t.Fatal(err)
	}
	first := s.Wait()
	if res := first; len(res.IDs) == 0 {
		t.Fatal("no reply before the switch")
	}
	for _, c := range []struct{ name, val string }{{"kv_quant_k", "int4"}, {"kv_quant_v", "fp8"}} {
		if got, err := s.Set(c.name, c.val); err != nil || got != c.name+" "+c.val {
			t.Fatalf("/set %s %s: %q, %v", c.name, c.val, got, err)
		}
	}
	if v := s.Settings(); v.KVQuantK != "int4" || v.KVQuantV != "fp8" {
		t.Fatalf("settings after /set: k %q v %q", v.KVQuantK, v.KVQuantV)
	}
	if err := s.Send("and then"); err != nil {
		t.Fatal(err)
	}
	res := s.Wait()
	if len(res.IDs) == 0 {
		t.Fatal("no reply after the switch")
	}
	if kv := res.Stats; kv.KVFormatK != "int4" || kv.KVFormatV != "fp8" {
		t.Errorf("the reply ran on keys %q, values %q", kv.KVFormatK, kv.KVFormatV)
	}
	// auto names what it chose: float32 for the embedded course model.
	s.Poll()
	for _, name := range []string{"kv_quant_k", "kv_quant_v"} {
		if _, err := s.Set(name, "auto"); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Poll().Notices; len(n) == 0 || !strings.Contains(n[len(n)-1], "keys f32, values f32") {
		t.Errorf("notices after /set kv_quant_k auto: %q", n)
	}
	if err := s.Send("and at last"); err != nil {
		t.Fatal(err)
	}
	if kv := s.Wait().Stats; kv.KVFormatK != "f32" || kv.KVFormatV != "f32" {
		t.Errorf("auto ran on keys %q, values %q; want f32 for a course checkpoint", kv.KVFormatK, kv.KVFormatV)
	}
	if _, err := s.Set("kv_quant_k", "int9"); err == nil {
		t.Error("/set kv_quant_k int9 accepted")
	}
}
