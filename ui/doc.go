// Package ui is the terminal chat UI: a bubbletea v2 program that drives a
// Backend (the session) and never touches the engine or the models.
//
//	err := ui.Run(sess, ui.Options{}) // alt screen until Ctrl+C
//
// Layout: a header (model · arch · quant · params · ctx · mode), the
// transcript, a hint/notice line and a multi-line input; a side panel with
// the sampler knobs, KV fill, token counts, TTFT, tok/s and state from 90
// columns, a one-line status under the transcript below that.
//
// Keys: Enter sends, Alt+Enter / Ctrl+J / Shift+Enter add a line, Esc stops
// the reply (or closes the help), Ctrl+C quits, F1 (or ? on an empty input)
// shows the help. PgUp/PgDn, Ctrl+↑/↓ (Alt+↑/↓), Ctrl+Home/End and the
// wheel scroll; the transcript follows new text only while at the bottom.
// F2–F10 (or Alt+t/T, p/P, m/M, k/K, g) change temperature, top-p, min-p,
// top-k and greedy from the next token. ↑/↓ on an empty input recall
// earlier messages.
//
// The backend is polled on a tick (30 Hz while a reply streams, 4 Hz idle);
// nothing blocks in Update or View. Finished messages are wrapped once per
// width and cached; only the last paragraph of the streaming reply is
// wrapped again as text arrives.
package ui
