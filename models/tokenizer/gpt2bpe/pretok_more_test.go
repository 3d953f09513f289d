package gpt2bpe

import (
	"reflect"
	"testing"
)

// TestPretokenizeMore pins splits of the pre-tokenizers of pretok_more.go,
// checked by hand against llama.cpp's expressions (and by
// TestPreTokenizersLlamaCpp in models/llama against llama.cpp itself):
// std::regex's collapsed classes make a non-ASCII capital both upper and
// lower case ("ÉCOLE" gives "É", "COLE"), AFMoE's digit scanner carries the
// text before a run of digits into its first group, the first alternative
// that matches wins (BLOOM's unmatched "! (" stays one piece), and every
// expression of a list splits the pieces the previous ones left
// (Chameleon's sentinel).
func TestPretokenizeMore(t *testing.T) {
	cases := []struct {
		pre, text string
		want      []string
	}{
		{"tekken", "ÉCOLE École HelloWorld x/\n/y 12", []string{"É", "COLE", " École", " Hello", "World", " x", "/\n/", "y", " ", "1", "2"}},
		{"gpt-4o", "ÉCOLE I'M 12345 x/\n", []string{"É", "COLE", " I'M", " ", "123", "45", " x", "/\n"}},
		{"granite-embed-multi-97m", "a\u0301B \u0301x", []string{"a\u0301", "B", " \u0301x"}},
		{"tiny_aya", "ab1234567 x", []string{"ab", "1", "234", "567", " x"}},
		{"youtu", "한국어！…中文ㄅㄆ abc's 12", []string{"한국어", "！…", "中文", "ㄅㄆ", " abc's", " ", "1", "2"}},
		{"deepseek-v3", "12345 .net 中文字 a\u0301 !!\n\nx", []string{"123", "45", " .", "net", " ", "中文字", " a\u0301", " !!\n\n", "x"}},
		{"afmoe", "x  12345 ไทย", []string{"x", " ", " ", "12", "345", " ", "ไ", "ทย"}},
		{"kimi-k2", "中文abc's 中x 1234", []string{"中文", "abc's", " ", "中", "x", " ", "123", "4"}},
		{"bailingmoe", "I'M 12 !!\n\nx", []string{"I", "'M", " ", "1", "2", " !!\n\n", "x"}},
		{"seed-coder", "a!!\n\nb", []string{"a", "!!", "\n\n", "b"}},
		{"exaone-moe", "hello big world, 12 x!/\n\n", []string{"hello big world", ",", " ", "1", "2", " x", "!/\n", "\n"}},
		{"jais-2", "a     b      \n x", []string{"a", "    ", " b", "      \n", " x"}},
		{"minicpm5", "a  1234", []string{"a", "  ", "123", "4"}},
		{"laguna", "a b\n\nc", []string{"a", " b", "\n\n", "c"}},
		{"bloom", "Hello, world! (x|y) a…b", []string{"Hello", ",", " world", "! (", "x", "|", "y", ")", " a", "…", "b"}},
		{"viking", "abc123 x", []string{"abc", "1", "2", "3", " x"}},
		{"chameleon", "<sentinel:12>IMGIMGABZ   a\tb 12!", []string{"<", "sentinel", ":", "1", "2", ">", "IMGIMGABZ", "  ", " a", "\t", "b", " ", "1", "2", "!"}},
		{"superbpe", "12345678 123", []string{"12", "345", "678", " ", "123"}},
		{"superbpe", "1234567 a12", []string{"1", "234", "567", " a", "12"}},
	}
	for _, c := range cases {
		steps, err := pretokenizer(c.pre)
		if err != nil {
			t.Fatal(err)
		}
		cpts := decodeRunes(c.text)
		var got []string
		for _, sp := range pretokenize(steps, cpts) {
			got = append(got, string(cpts[sp.start:sp.end]))
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q: %q, want %q", c.pre, c.text, got, c.want)
		}
	}
}
