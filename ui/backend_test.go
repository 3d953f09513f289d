package ui

import "chat/session"

// The session is the backend the program runs with, with every optional
// part the UI uses.
var (
	_ Backend        = (*session.Session)(nil)
	_ Commander      = (*session.Session)(nil)
	_ Completer      = (*session.Session)(nil)
	_ Regenerator    = (*session.Session)(nil)
	_ Editor         = (*session.Session)(nil)
	_ Clearer        = (*session.Session)(nil)
	_ TokenCounter   = (*session.Session)(nil)
	_ StatusReporter = (*session.Session)(nil)
	_ Historian      = (*session.Session)(nil)
	_ Saver          = (*session.Session)(nil)
	_ Loader         = (*session.Session)(nil)
	_ Buser          = (*session.Session)(nil)
)
