//go:build !amd64 || purego

package kernels

// No group kernels: the group functions are per-query calls.
var groupAsm groupKernels
