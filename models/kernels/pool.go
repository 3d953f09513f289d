package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// parallelMin is the product size (rows*cols*tokens; twice this for the
// int8 products) below which the products run on the calling goroutine alone: about 2-3 µs of work from cache,
// where handing half to a worker stops paying for the hand-off.
const parallelMin = 1 << 16

// spinFor is how long an idle worker polls for the next job before it parks.
// The engine calls kernels back to back during a token, so a worker stays hot
// through a forward pass, but never burns a core while the app is idle.
const spinFor = 50 * time.Microsecond

// SetThreads sets how many threads (the caller plus n-1 workers) the matrix
// products (MatVec, MatMul, the F16, int8 and block products) use, clamped to [1, runtime.NumCPU()]. The default is
// min(runtime.NumCPU(), GOMAXPROCS at start-up). Workers start on the first
// product large enough to split.
func SetThreads(n int) {
	defaultPool.setThreads(min(max(n, 1), runtime.NumCPU()))
}

// Threads returns the thread count set by SetThreads.
func Threads() int {
	defaultPool.mu.Lock()
	defer defaultPool.mu.Unlock()
	return defaultPool.threads
}

var defaultPool = pool{threads: min(runtime.NumCPU(), runtime.GOMAXPROCS(0))}

const (
	opMatVec = iota
	opMatMul
	opMatVecI8
	opMatVecQ4K
	opMatVecQ5K
	opMatVecQ6K
	opMatVecIQ4XS
	opMatVecQ2K
	opMatVecQ3K
	opBatch    // the batched products: job.bt
	opMatVecQF // float-activation products of quantized weights: j.qf
	opMatMulQF
	opMatVecL4 // 4-bit table products: j.l4
	opMatMulL4
	opGEMM       // MatMul's GEMM path (gemm.go): j.dx holds the packed x
	opMatVecHalf // the f16 and bf16 products (f16il.go): j.wh of kind j.wk
	opMatMulHalf
	opGEMMHalf // their prefill's GEMM path: j.wh, j.wk, j.dx the packed x
	opPair     // the float pair tiles (pairtile.go): j.wp, j.wk, j.dx the packed x
	opIL       // the interleaved-block products (ilblock.go): j.il, rows = row groups
	opFunc     // Parallel: j.fn over rows items
	opILK      // the interleaved K-quant products (ilk.go): j.ilk, rows = row groups
)

// Worker states. The caller moves idle→posted; the worker takes a job with
// posted→running and ends it with running→idle. A caller that has finished
// every chunk before the worker woke withdraws the job with posted→idle, so
// it never waits for a worker that is descheduled or still parked.
const (
	wIdle int32 = iota
	wPosted
	wRunning
	wQuit
)

type worker struct {
	state  atomic.Int32
	parked atomic.Bool   // set by the worker just before it blocks on wake
	wake   chan struct{} // capacity 1; one send per parked→false swap
	_      [48]byte      // keep each worker's flags on its own cache line
}

// job is the product being split. Rows go in chunks handed out through next,
// so a worker that starts late simply gets fewer chunks: results are the same
// since each row is computed whole by one kernel call.
type job struct {
	op            int
	out, w, x     []float32
	rows, cols, n int
	// int8 operands: weights qw with scales sw (per row or per block),
	// activations qx with scale sx (per vector) or dx (per block).
	qw, qx []int8
	sw, dx []float32
	sx     float32
	// block products: GGUF weight blocks wb, Q8_K activation sums xsum.
	wb            []byte
	xsum          []int16
	wh            []uint16       // f16 or bf16 weights, interleaved (f16il.go)
	wp            unsafe.Pointer // the pair tiles' weights: float32, or f16 or bf16 interleaved
	wk            wkind          // the kind of wh or wp
	qf            qfProd         // qf.go
	l4            l4Prod         // lut4.go
	il            ilProd         // ilblock.go
	ilk           ilkProd        // ilk.go
	bt            batch
	fn            func(i0, i1 int) // Parallel's
	chunk, chunks int
	_             [64]byte
	next          atomic.Int64
	_             [56]byte
}

type pool struct {
	mu      sync.Mutex // held by the one caller using the pool
	threads int
	started bool
	workers []*worker
	job     job
}

func (p *pool) setThreads(n int) {
	p.mu.Lock()
	p.threads = n
	if p.started {
		p.resize()
	}
	p.mu.Unlock()
}

// resize starts or stops workers to match p.threads; p.mu must be held.
func (p *pool) resize() {
	want := max(p.threads-1, 0)
	for len(p.workers) > want {
		wk := p.workers[len(p.workers)-1]
		p.workers = p.workers[:len(p.workers)-1]
		wk.post(wQuit)
	}
	for len(p.workers) < want {
		wk := &worker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, wk)
		go p.work(wk)
	}
}

// run splits a float product over the pool and returns true once it is
// done. It returns false, having done nothing, when the pool is
// single-threaded or busy with another caller; the caller then computes the
// product alone.
func (p *pool) run(op int, out, w, x []float32, rows, cols, n int) bool {
	j := p.acquire()
	if j == nil {
		return false
	}
	j.op, j.out, j.w, j.x = op, out, w, x
	j.rows, j.cols, j.n = rows, cols, n
	gran := 8 // the MatVec kernel's row block
	if op == opMatMul {
		gran = 4 // the MatMul tile's rows
	}
	p.exec(gran)
	return true
}

// Parallel calls fn over [0, n) in chunks on the compute threads (all of
// it on the caller when single-threaded or the pool is in use). Each item
// must be independent of the others: which thread runs it cannot change
// its result. fn should be a func value kept by the caller, so that a call
// allocates nothing.
func Parallel(n int, fn func(i0, i1 int)) {
	if n > 1 {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.fn, j.rows = opFunc, fn, n
			defaultPool.exec(1)
			return
		}
	}
	fn(0, n)
}

// acquire returns the pool's job for the caller to fill in and pass to exec,
// or nil if the pool is single-threaded or in use.
func (p *pool) acquire() *job {
	if !p.mu.TryLock() {
		return nil
	}
	if p.threads <= 1 {
		p.mu.Unlock()
		return nil
	}
	return &p.job
}

// exec runs the job acquired and filled in by the caller, split into chunks
// of whole kernel blocks (gran rows), about 8 per thread so a late worker
// still balances, and releases the pool.
func (p *pool) exec(gran int) {
	j := &p.job
	chunk := (j.rows + p.threads*8 - 1) / (p.threads * 8)
	chunk = (max(chunk, 1) + gran - 1) / gran * gran
	j.chunk, j.chunks = chunk, (j.rows+chunk-1)/chunk
	j.next.Store(0)
	if j.chunks > 1 {
		if !p.started {
			p.started = true
			p.resize()
		}
		for _, wk := range p.workers {
			wk.post(wPosted)
		}
	}
	j.drain()
	if j.chunks > 1 {
		for _, wk := range p.workers {
			if wk.state.CompareAndSwap(wPosted, wIdle) {
				continue // never started
			}
			for i := 1; wk.state.Load() != wIdle; i++ {
				spinPause() // it is finishing its last chunk
				if i%1024 == 0 {
					runtime.Gosched()
				}
			}
		}
	}
	// Don't keep the operands alive.
	j.out, j.w, j.x, j.qw, j.sw, j.qx, j.dx = nil, nil, nil, nil, nil, nil, nil
	j.wb, j.xsum, j.wh, j.wp = nil, nil, nil, nil
	j.qf, j.l4, j.il, j.ilk = qfProd{}, l4Prod{}, ilProd{}, ilkProd{}
	j.bt, j.fn = batch{}, nil
	p.mu.Unlock()
}

func (j *job) drain() {
	for {
		c := int(j.next.Add(1)) - 1
		if c >= j.chunks {
			return
		}
		r0 := c * j.chunk
		r1 := min(j.rows, r0+j.chunk)
		switch j.op {
		case opMatVec:
			matVecRange(j.out, j.w, j.x, j.cols, r0, r1)
		case opMatMul:
			matMulRange(j.out, j.w, j.x, j.rows, j.cols, j.n, r0, r1)
		case opMatVecI8:
			matVecI8Range(j.out, j.qw, j.sw, j.qx, j.sx, j.cols, r0, r1)
		case opMatVecQ4K, opMatVecQ5K, opMatVecQ6K, opMatVecIQ4XS, opMatVecQ2K, opMatVecQ3K:
			blockRange(j.op, j.out, j.wb, j.qx, j.dx, j.xsum, j.cols, r0, r1)
		case opBatch:
			j.bt.run(r0, r1)
		case opMatVecQF:
			j.qf.matVecRange(j.out, j.x, j.cols, r0, r1)
		case opMatMulQF:
			j.qf.matMulRange(j.out, j.x, j.rows, j.cols, j.n, r0, r1)
		case opMatVecL4:
			j.l4.matVecRange(j.out, j.x, j.cols, r0, r1)
		case opMatMulL4:
			j.l4.matMulRange(j.out, j.x, j.rows, j.cols, j.n, r0, r1)
		case opGEMM:
			gemmRange(j.out, j.w, j.x, j.dx, j.rows, j.cols, j.n, r0, r1)
		case opMatVecHalf:
			matVecHalfILRange(j.wk, j.out, j.wh, j.x, j.rows, j.cols, r0, r1)
		case opMatMulHalf:
			matMulHalfILRange(j.wk, j.out, j.wh, j.x, j.rows, j.cols, j.n, r0, r1)
		case opIL:
			j.il.run(r0, r1)
		case opPair:
			pairRange(j.out, j.wp, j.wk, j.dx, j.rows, j.cols, j.n, r0, r1)
		case opGEMMHalf:
			gemmRangeHalf(j.wk, j.out, j.wh, j.x, j.dx, j.rows, j.cols, j.n, r0, r1)
		case opILK:
			j.ilk.run(r0, r1)
		case opFunc:
			j.fn(r0, r1)
		}
	}
}

func (p *pool) work(wk *worker) {
	for {
		switch wk.wait() {
		case wQuit:
			return
		case wPosted:
			if wk.state.CompareAndSwap(wPosted, wRunning) {
				p.job.drain()
				wk.state.Store(wIdle)
			}
		}
	}
}

// post sets the worker's state and wakes it if it is parked.
func (wk *worker) post(s int32) {
	wk.state.Store(s)
	if wk.parked.Load() && wk.parked.Swap(false) {
		wk.wake <- struct{}{}
	}
}

// wait returns once the state is posted or quit: it polls for spinFor, then
// parks on wake. The parked flag closes the race with post: either post sees
// parked and sends, or the worker sees the new state after setting parked.
func (wk *worker) wait() int32 {
	for {
		start := time.Now()
		for i := 1; ; i++ {
			if s := wk.state.Load(); s == wPosted || s == wQuit {
				return s
			}
			spinPause()
			if i%128 == 0 {
				if time.Since(start) > spinFor {
					break
				}
				runtime.Gosched() // let other goroutines have this P
			}
		}
		wk.parked.Store(true)
		if s := wk.state.Load(); s == wPosted || s == wQuit {
			if !wk.parked.Swap(false) {
				<-wk.wake // post saw parked and has sent; take it
			}
			return s
		}
		<-wk.wake
	}
}
