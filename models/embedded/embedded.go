// Package embedded carries the default model inside the binary, so that
// `chat` with no flags works on a fresh machine: student-chat-1k.pt, a
// chat-tuned student-size modern model with a 1,024-token context, made with
// the course's own code and tuned on multi-turn chats (see
// ../shared/models/embed/README.md; 10.3 MB).
package embedded

import _ "embed"

// Name is the file name the default model is shown under.
const Name = "student-chat-1k.pt"

// Model holds the bytes of the default checkpoint.
//
//go:embed student-chat-1k.pt
var Model []byte
