// Package ui is the terminal chat UI: a bubbletea v2 program that drives a
// Backend (the session) and never touches the engine or the models.
//
//	err := ui.Run(sess, ui.Options{Theme: cfg.Theme, Keys: cfg.Keys})
//
// Layout: a header (model · arch · quant · params · ctx · mode), the
// transcript, a hint/notice line and a multi-line input; a side panel with
// the state, every sampler knob and the processors applied, KV fill, token
// counts, TTFT and tok/s from 90 columns, a one-line status under the
// transcript below that. The command palette, the completion popup and the
// sessions picker are drawn over the bottom of the transcript; help and
// several-line command answers over all of it.
//
// Keys (keymap.go; every one remappable by action name through
// Options.Keys): Enter sends or runs a /command, Alt+Enter / Ctrl+J /
// Shift+Enter add a line, Esc stops the reply or closes what is open, Ctrl+C
// quits, F1 (or ? on an empty input) shows the help, Ctrl+P the palette,
// Tab completes a command, Ctrl+R regenerates, Ctrl+E on an empty input
// edits the last message (again: the one before), Ctrl+Y / Alt+Y copy the
// last reply / code block (OSC 52), F12 toggles markdown. PgUp/PgDn,
// Ctrl+↑/↓ (Alt+↑/↓), Ctrl+Home/End and the wheel scroll; the transcript
// follows new text only while at the bottom. F2–F10 (or Alt+2…0, Alt+t/T,
// p/P, m/M, k/K, g) change temperature, top-p, min-p, top-k and greedy from
// the next token. ↑/↓ on an empty input recall earlier prompts (the
// backend's History too).
//
// Optional backend parts (backend.go: Commander, Completer, Regenerator,
// Editor, Clearer, SystemSetter, Historian, Saver, Loader, Buser,
// StatusReporter) are found by type assertion; a backend without them still
// works and the UI says what it cannot do.
//
// The backend is polled on a tick (30 Hz while a reply streams, 4 Hz idle);
// nothing blocks in Update or View. Finished messages are rendered once per
// width and cached (only the visible ones are kept past maxCachedLines).
// Replies are markdown (markdown.go): cut into blocks, each rendered on its
// own with glamour, so a streaming reply renders only its open block per
// poll; fenced code is drawn verbatim. Light or dark comes from the
// terminal's background colour unless Options.Theme says; Plain (NO_COLOR)
// has no escape codes at all.
package ui
