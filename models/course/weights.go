package course

import (
	"fmt"
	"slices"
)

// tensor is the part of a checkpoint tensor this package needs. It keeps the
// model code independent of the reader's types.
type tensor struct {
	DType string
	Shape []int
	F32   []float32
}

// tensorSet hands out checked tensors by name and counts what it handed out.
type tensorSet struct {
	file    string // for errors
	tensors map[string]tensor
	params  int64 // parameters taken (each distinct tensor once)
	seen    map[string]bool
}

// get returns key's data after checking it has exactly shape; why names the
// config values the shape comes from, for the error message.
func (ts *tensorSet) get(key, why string, shape ...int) ([]float32, error) {
	t, ok := ts.tensors[key]
	if !ok {
		return nil, fmt.Errorf("course: %s: missing %s, config expects shape %v (%s)", ts.file, key, shape, why)
	}
	if !slices.Equal(t.Shape, shape) {
		return nil, fmt.Errorf("course: %s: %s has shape %v, config expects %v (%s)", ts.file, key, t.Shape, shape, why)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	if t.F32 == nil {
		return nil, fmt.Errorf("course: %s: %s has dtype %s, want float32", ts.file, key, t.DType)
	}
	if len(t.F32) != n {
		return nil, fmt.Errorf("course: %s: %s holds %d values for shape %v", ts.file, key, len(t.F32), shape)
	}
	if !ts.seen[key] {
		ts.seen[key] = true
		ts.params += int64(n)
	}
	return t.F32, nil
}

// concatRows stacks row-major matrices (all with the same column count) into
// one new matrix, so a fused projection is one kernel call.
func concatRows(parts ...[]float32) []float32 {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]float32, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
