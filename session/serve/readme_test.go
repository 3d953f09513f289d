package serve

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// README.md's serving section and routes() name the same routes: each
// route is mentioned, and each `GET /path` or `POST /path` it shows is one.
func TestReadmeRoutes(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n### Serving")
	if !ok {
		t.Fatal("README.md has no ### Serving section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	src, err := os.ReadFile("serve.go")
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[a-z]+\}`) // README's {id} is the code's {model}
	routes := map[string]bool{}
	for _, m := range regexp.MustCompile(`handle\("(GET|POST) (/[^"{$]*(?:\{[a-z]+\})?)"`).FindAllStringSubmatch(string(src), -1) {
		path := param.ReplaceAllString(m[2], "{}")
		routes[m[1]+" "+path] = true
		if !strings.Contains(param.ReplaceAllString(section, "{}"), "`"+path+"`") &&
			!strings.Contains(param.ReplaceAllString(section, "{}"), "`"+m[1]+" "+path+"`") {
			t.Errorf("README's serving section does not mention %s %s", m[1], m[2])
		}
	}
	if len(routes) < 15 {
		t.Fatalf("only %d routes found in serve.go: did routes() change form?", len(routes))
	}
	for _, m := range regexp.MustCompile("`((?:GET|POST) /[^` ]*)`").FindAllStringSubmatch(section, -1) {
		if !routes[param.ReplaceAllString(m[1], "{}")] {
			t.Errorf("README shows %s, which chat serve does not route", m[1])
		}
	}
}

// README.md names every field a route refuses (the off lists): each of
// openaiOff where the chat route's fields end, of responsesOff in the
// Responses paragraph, each of llamaOff in
// /completion's. best_of and use_beam_search were refused by
// /v1/responses and left out of its list.
func TestReadmeRefusedFields(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from, to string
		fields   []offField
	}{
		{"On every OpenAI\nroute the fields it cannot honour", "OpenAI's Responses API", openaiOff},
		{"what needs storage or tools is a 400 naming the field:", "It also answers", responsesOff},
		{"The fields this server does not have are a 400", "Errors on llama-server's routes", llamaOff},
	} {
		_, para, ok := strings.Cut(string(readme), c.from)
		if para, _, ok2 := strings.Cut(para, c.to); ok && ok2 {
			for _, f := range c.fields {
				if !strings.Contains(para, "`"+f.name) {
					t.Errorf("README's list after %q lacks `%s`", c.from, f.name)
				}
			}
			continue
		}
		t.Errorf("README.md has no %q ... %q", c.from, c.to)
	}
}
