package ui

import (
	"strings"
	"testing"
	"time"
)

// TestPanelDecodeBound: the panel's Speed section gets a line with the
// decode bound per token and the measured time per token when the session
// knows the bound, and none when it does not.
func TestPanelDecodeBound(t *testing.T) {
	m := newTest(newFake(), 120, 40)
	poll(m)
	if strings.Contains(strings.Join(m.panelLines(34, 40), "\n"), "bound") {
		t.Fatal("a bound line without a bound")
	}
	m.stats.DecodeBound = 770 * time.Microsecond
	m.stats.DecodeTokS = 500
	got := strings.Join(m.panelLines(40, 40), "\n")
	if !strings.Contains(got, "bound      0.77 ms/tok · measured 2 ms") {
		t.Fatalf("panel:\n%s", got)
	}
}
