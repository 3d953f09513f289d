// Package ui is the terminal chat UI: a bubbletea v2 program that drives a
// Backend (the session) and never touches the engine or the models.
//
//	err := ui.Run(sess, ui.Options{Theme: cfg.Theme, Keys: cfg.Keys})
//
// Layout: a header (model · arch · quant · params · ctx · mode), the
// transcript, the notice or hint lines and a multi-line input; a side panel
// with the state, every setting that has a panel label (config/settings)
// with its hot keys, the processors applied, the speculation set, KV fill,
// token counts, TTFT and tok/s from 90 columns, a one-line status under the
// transcript below that (Ctrl+O then shows the panel as an overlay).
//
// Components (focus.go): the transcript, the input and the panel each draw
// in the size they are given; panes (help, long answers), the command
// palette and the sessions picker, the panel overlay and the completion
// popup are layers on a focus stack over the transcript. A key goes to the
// top layer first, down the stack, then to the root.
//
// Keys (config/settings declares them; every one remappable by action name
// through Options.Keys): Enter sends or runs a /command, Alt+Enter / Ctrl+J
// / Shift+Enter add a line, Esc stops the reply or closes what is open,
// Ctrl+C stops a reply, clears the input, and quits on an empty idle prompt,
// Ctrl+D quits on an empty input, Ctrl+Z suspends to the shell, F1 (or ?
// on an empty input) shows the help, Ctrl+P the palette, Tab completes a
// command, Ctrl+R regenerates, Ctrl+E on an empty input edits the last
// message, Ctrl+Y / Alt+y copy the last reply / code block (OSC 52), F12
// toggles markdown. PgUp/PgDn, Ctrl+↑/↓ (Alt+↑/↓), Ctrl+Home/End and the
// wheel scroll; the transcript follows new text only while at the bottom.
// F2–F10 (or Alt+2…0, Alt+t/T, p/P, m/M, k/K, g) change temperature,
// top-p, min-p, top-k and greedy from the next token; F11 switches the
// weights float32 ↔ int8 and Alt+s the speculation, both from the next
// reply. ↑/↓ on an empty input recall earlier prompts.
//
// The views (views.go; config/settings declares them): Alt+n the
// next-token bars, Alt+h the token heat map, Alt+v the KV block map, Alt+w
// the sparklines, Alt+. step mode (then one token per press, Esc leaves),
// and /view. They draw what the backend's polls bring — records the
// engine made at the poll rate — in a dock above the input, and the token
// view in the transcript itself.
//
// Settings change through the backend's Settings and Apply (typed values,
// never /set strings); optional backend parts (backend.go: Commander,
// Completer, Regenerator, Editor, Clearer, Historian, Saver, Loader, Buser,
// StatusReporter, TokenCounter) are found by type assertion, and a backend
// without them still works.
//
// The backend is polled on a tick (30 Hz while a reply streams, 4 Hz idle);
// nothing blocks in Update or View, and a slow backend call (a command, a
// weight switch) runs off the loop. Finished messages are rendered once per
// width and cached (only the visible ones are kept past maxCachedLines).
// Replies are markdown (markdown.go): cut into blocks, each rendered on its
// own with glamour, so a streaming reply renders only its open block per
// poll; fenced code is drawn verbatim. Light or dark comes from the
// terminal's background colour unless Options.Theme says; Plain (NO_COLOR)
// has no escape codes at all.
package ui
