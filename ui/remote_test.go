package ui

import (
	"strings"
	"testing"

	"chat/session"

	"github.com/charmbracelet/x/ansi"
)

// TestPanelRemoteServer: on a remote session the panel shows the server's
// figures from /metrics and says plainly which it does not report; without
// /metrics it says that.
func TestPanelRemoteServer(t *testing.T) {
	m := newTest(newFake(), 120, 50)
	m.stats = session.Stats{PromptTokens: 46, ReusedTokens: 15, GenTokens: 30, Server: session.ServerStats{
		Kind: "vllm", Running: 3, Waiting: 1, KVUsage: 0.42, PrefixHitRate: 0.63, Preemptions: -1, SpecAcceptance: -1,
		Missing: "preemptions, speculative acceptance"}}
	panel := ansi.Strip(strings.Join(m.panelLines(40, 50), "\n"))
	for _, want := range []string{"Server", "vllm", "3 run · 1 wait", "KV cache   42%", "prefix hit 63%", "reused     15 tok",
		"not reported: preemptions, speculative", "acceptance"} {
		if !strings.Contains(panel, want) {
			t.Errorf("the panel lacks %q:\n%s", want, panel)
		}
	}
	if strings.Contains(panel, "preempted") || strings.Contains(panel, "KV pool") {
		t.Errorf("the panel shows a figure the server does not report:\n%s", panel)
	}
	m.stats.Server = session.ServerStats{Kind: "server", Metrics: "no /metrics (404)", Running: -1, Waiting: -1, KVUsage: -1,
		PrefixHitRate: -1, Preemptions: -1, SpecAcceptance: -1, Missing: "anything from /metrics, reused prompt tokens"}
	panel = ansi.Strip(strings.Join(m.panelLines(40, 50), "\n"))
	for _, want := range []string{"no /metrics (404)", "reused     not reported", "not reported: anything from /metrics"} {
		if !strings.Contains(panel, want) {
			t.Errorf("the panel lacks %q:\n%s", want, panel)
		}
	}
}

// TestPanelRemoteConstraint: a constraint the server applies has no mask
// figures here, and the panel says where it runs instead of "0 ids".
func TestPanelRemoteConstraint(t *testing.T) {
	m := newTest(newFake(), 120, 50)
	m.stats = session.Stats{Server: session.ServerStats{Kind: "vllm"},
		Constraint: session.ConstraintStats{Spec: "json", Remote: true}}
	panel := ansi.Strip(strings.Join(m.panelLines(40, 50), "\n"))
	if !strings.Contains(panel, "mask       on the server") || strings.Contains(panel, "0 ids") {
		t.Errorf("the remote constraint's mask line:\n%s", panel)
	}
}

// TestViewsOnRemote: with --remote the views that need the model's numbers
// say so; the sparklines draw as usual.
func TestViewsOnRemote(t *testing.T) {
	m := newTest(newFake(), 120, 50)
	m.info.Arch = "remote"
	for name, lines := range map[string][]string{"next": m.nextLines(80, 8), "kv": m.kvLines(80, 8), "tokens": m.tokenLegend(80, 1)} {
		if s := ansi.Strip(strings.Join(lines, "\n")); !strings.Contains(s, "not with --remote") {
			t.Errorf("%s view on --remote: %q", name, s)
		}
	}
	if s := ansi.Strip(strings.Join(m.sparkLines(80, 5), "\n")); strings.Contains(s, "not with --remote") || !strings.Contains(s, "decode") {
		t.Errorf("sparklines on --remote: %q", s)
	}
}
