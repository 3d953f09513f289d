package ui

import (
	"os"

	"golang.org/x/sys/unix"
)

// typedAhead takes what was typed into the terminal before the TUI took
// it, while the model loaded: the terminal was still in its line mode,
// which turned each Enter into a newline, and a newline reaching the input
// box inserts a line where the user meant to send. With the line mode off
// and reads that do not wait (VMIN = VTIME = 0) it reads what is pending,
// then puts the terminal back as it was.
func typedAhead(f *os.File) string {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "" // not a terminal
	}
	t := *old
	t.Lflag &^= unix.ICANON | unix.ECHO
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 0, 0
	if unix.IoctlSetTermios(fd, unix.TCSETS, &t) != nil {
		return ""
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)
	var b []byte
	buf := make([]byte, 4096)
	for len(b) < 64<<10 {
		n, err := unix.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		b = append(b, buf[:n]...)
	}
	return string(b)
}
