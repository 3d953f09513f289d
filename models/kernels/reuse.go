package kernels

import "github.com/klauspost/cpuid/v2"

// Reuse says whether a product's weights are still in the caches the next
// time they are multiplied, which decides how the kernels fetch them.
type Reuse uint8

const (
	// Cached weights fit the last-level cache (ReuseFor): a decode step
	// re-reads them from there, so the kernels prefetch them into every
	// level.
	Cached Reuse = iota
	// Stream weights are larger than the last-level cache: each step reads
	// them from memory once. MatMulIL's 1- and 2-token tiles (the
	// 32-value blocks) then fetch them non-temporally (PREFETCHNTA), so they
	// do not evict the KV rows and activations the step reads again:
	// bench110M decode 1.05× (BENCHMARKS.md); a model in cache fetched so
	// decodes 0.63-0.85×. Its larger tiles fetch as they always do (AVX-512
	// VNNI's non-temporally, AVX2's not); the K-quant tiles (MatMulILK) lost
	// by it (0.96-0.99×) and ignore it.
	Stream
)

// unknownLLC stands in for the last-level cache when the CPU does not
// report it (some hypervisors hide CPUID's cache leaves): the L3 of one
// Zen core complex, and of many Intel server parts per socket.
const unknownLLC = 32 << 20

// LastLevelCache is the size in bytes of the L3 cache CPUID reports, or
// 32 MiB when it reports none. (Not the L2 in its place: a hypervisor that
// hides the L3 still shows the core's L2, 1 MiB here, which would send
// every model but the smallest to Stream.)
func LastLevelCache() int64 {
	if n := cpuid.CPU.Cache.L3; n > 0 {
		return int64(n)
	}
	return unknownLLC
}

// ReuseFor is the Reuse of the weights of a model whose decode step reads
// weightBytes: Stream past the last-level cache.
func ReuseFor(weightBytes int64) Reuse {
	if weightBytes > LastLevelCache() {
		return Stream
	}
	return Cached
}
