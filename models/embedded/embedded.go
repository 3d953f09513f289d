// Package embedded carries the default model inside the binary, so that
// `chat` with no flags works on a fresh machine: student-chat.pt, a
// chat-tuned student-size modern model made with the course's own code
// (see ../shared/models/embed/README.md).
package embedded

import _ "embed"

// Name is the file name the default model is shown under.
const Name = "student-chat.pt"

// Model holds the bytes of the default checkpoint.
//
//go:embed student-chat.pt
var Model []byte
