package ui

import "chat/session"

// The session is the backend the program runs with.
var _ Backend = (*session.Session)(nil)
