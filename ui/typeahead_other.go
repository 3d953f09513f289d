//go:build !linux

package ui

import "os"

// typedAhead is typeahead_linux.go's; elsewhere what was typed during the
// load reaches the input as the terminal gives it.
func typedAhead(*os.File) string { return "" }
