//go:build tools

// Package main pins modules that packages under construction import, so that
// `go mod tidy` keeps them while those packages are written. Remove an import
// once real code uses it.
package main

import (
	_ "charm.land/bubbles/v2/textarea"
	_ "charm.land/bubbles/v2/viewport"
	_ "charm.land/bubbletea/v2"
	_ "charm.land/lipgloss/v2"
	_ "github.com/charmbracelet/x/exp/teatest/v2"
	_ "golang.org/x/sys/cpu"
	_ "gonum.org/v1/gonum/stat/distuv"
)
