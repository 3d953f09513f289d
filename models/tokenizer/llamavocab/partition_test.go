package llamavocab

import (
	"reflect"
	"testing"
)

func TestPartition(t *testing.T) {
	texts := map[int]string{1: "<|eot|>", 2: "<s>", 3: "<|e"}
	tok := func(id int) string { return texts[id] }
	got := Partition("a<|eot|>b<s><s>c<|e", []int{1, 2, 3}, tok, nil)
	want := []Fragment{{"a", -1}, {"", 1}, {"b", -1}, {"", 2}, {"", 2}, {"c", -1}, {"", 3}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	// A token left out by use stays text.
	got = Partition("a<s>b", []int{2}, tok, func(id int) bool { return id != 2 })
	if !reflect.DeepEqual(got, []Fragment{{"a<s>b", -1}}) {
		t.Fatalf("unused token matched: %+v", got)
	}
	if Partition("", []int{1}, tok, nil) != nil {
		t.Fatal("empty text gives fragments")
	}
}
