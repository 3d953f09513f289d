package plan

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"chat/models/hugepage"
	"chat/models/kernels"
)

// The probe measures this machine with the kernels the models run on, with
// the compute threads they use: peak FLOP/s as the best rate of a float32
// matrix product over 64 tokens on a 1024×1024 matrix that stays in cache
// (every weight used 64 times: compute-bound); the int8 peak as the best
// rate of a loop of the instruction the integer kernels multiply-add with
// on this kernel set, on operands in registers (kernels.Int8Dots: no int8
// product runs faster); and read bandwidth as the
// best rate of matrix-vector products over 32 matrices of 4 MB, 128 MB in
// all (every weight used once, read from memory, matrix after matrix: how
// fast decode can stream a model's weights). Each is
// the best of repeated runs over a tenth to a quarter of a second, so a busy
// moment lowers it less. The result is cached per CPU, kernel set and thread count.
// (chat plan also reads the same matrices between its measured decode
// steps: Streamer.)

// Probe is a measured machine.
type Probe struct {
	Machine
	CPU     string    `json:"cpu"`
	ISA     string    `json:"isa"`
	Threads int       `json:"threads"`
	When    time.Time `json:"when"`
	Cached  bool      `json:"-"` // read from the cache file, not measured now
}

// MarshalJSON flattens the machine's numbers into the cache file.
func (p Probe) MarshalJSON() ([]byte, error) {
	type file struct {
		PeakFLOPS float64   `json:"peak_flops"`
		PeakInt8  float64   `json:"peak_int8_ops"`
		Bandwidth float64   `json:"read_bytes_per_s"`
		CPU       string    `json:"cpu"`
		ISA       string    `json:"isa"`
		Threads   int       `json:"threads"`
		When      time.Time `json:"when"`
	}
	return json.Marshal(file{p.PeakFLOPS, p.PeakInt8, p.Bandwidth, p.CPU, p.ISA, p.Threads, p.When})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *Probe) UnmarshalJSON(b []byte) error {
	var f struct {
		PeakFLOPS float64   `json:"peak_flops"`
		PeakInt8  float64   `json:"peak_int8_ops"`
		Bandwidth float64   `json:"read_bytes_per_s"`
		CPU       string    `json:"cpu"`
		ISA       string    `json:"isa"`
		Threads   int       `json:"threads"`
		When      time.Time `json:"when"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*p = Probe{Machine: Machine{PeakFLOPS: f.PeakFLOPS, PeakInt8: f.PeakInt8, Bandwidth: f.Bandwidth},
		CPU: f.CPU, ISA: f.ISA, Threads: f.Threads, When: f.When}
	return nil
}

// cacheFile is where probes are kept: one per CPU, kernel set and threads.
func cacheFile() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "chat", "probe.json"), nil
}

// key names the machine a probe is valid for.
// "2M": measured on huge-page memory (a probe on 4 KiB pages read less).
func (p Probe) key() string { return fmt.Sprintf("%s|%s|%d|2M", p.CPU, p.ISA, p.Threads) }

func current() Probe {
	return Probe{CPU: cpuName(), ISA: kernels.ISA(), Threads: kernels.Threads()}
}

var probeMu sync.Mutex

// Cached returns the cached probe of this machine, if there is one.
func Cached() (Probe, bool) {
	probeMu.Lock()
	defer probeMu.Unlock()
	return cached(current())
}

func cached(want Probe) (Probe, bool) {
	path, err := cacheFile()
	if err != nil {
		return Probe{}, false
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 1<<20 {
		return Probe{}, false
	}
	var all map[string]Probe
	if json.Unmarshal(b, &all) != nil {
		return Probe{}, false
	}
	p, ok := all[want.key()]
	// A probe cached before the int8 peak was measured is measured again.
	if !ok || !(p.PeakFLOPS > 0) || !(p.PeakInt8 > 0) || !(p.Bandwidth > 0) {
		return Probe{}, false
	}
	p.Cached = true
	return p, true
}

// Measure returns the cached probe of this machine, or measures it (about
// two thirds of a second) and caches it. fresh measures even when a probe is cached.
func Measure(fresh bool) (Probe, error) {
	probeMu.Lock()
	defer probeMu.Unlock()
	p := current()
	if !fresh {
		if c, ok := cached(p); ok {
			return c, nil
		}
	}
	p.PeakFLOPS, p.PeakInt8, p.Bandwidth = peakFLOPS(), peakInt8(), readBandwidth()
	p.When = time.Now().UTC().Truncate(time.Second)
	if !(p.PeakFLOPS > 0) || !(p.PeakInt8 > 0) || !(p.Bandwidth > 0) {
		return p, errors.New("plan: the probe measured nothing (timer too coarse?)")
	}
	return p, save(p)
}

func save(p Probe) error {
	path, err := cacheFile()
	if err != nil {
		return err
	}
	all := map[string]Probe{}
	if b, err := os.ReadFile(path); err == nil && len(b) <= 1<<20 {
		_ = json.Unmarshal(b, &all)
	}
	all[p.key()] = p
	b, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// best runs f until budget has passed (at least 3 times) and returns the
// shortest run.
func best(budget time.Duration, f func()) time.Duration {
	f() // warm up: page in, spin up the threads
	var b time.Duration
	start := time.Now()
	for i := 0; i < 3 || time.Since(start) < budget; i++ {
		t0 := time.Now()
		f()
		if d := time.Since(t0); b == 0 || d < b {
			b = d
		}
	}
	return b
}

func peakFLOPS() float64 {
	const rows, cols, n = 1024, 1024, 64
	w, x, out := fill(rows*cols), fill(cols*n), make([]float32, rows*n)
	d := best(250*time.Millisecond, func() { kernels.MatMul(out, w, x, rows, cols, n) })
	return 2 * rows * cols * n / d.Seconds()
}

// peakInt8 runs the int8 loop on every compute thread: 16 pieces a thread
// of 2^16 steps (8.4 million multiply-adds, some 15 µs with VPDPBUSD).
// Its operands are in registers, so a tenth of a second finds its best.
func peakInt8() float64 {
	const steps = 1 << 16
	items := 16 * kernels.Threads()
	macs, _ := kernels.Int8Dots(steps)
	var sink atomic.Int32 // the sums are used: no loop is optimised away
	run := func(i0, i1 int) {
		for range i1 - i0 {
			_, s := kernels.Int8Dots(steps)
			sink.Add(s[0])
		}
	}
	d := best(100*time.Millisecond, func() { kernels.Parallel(items, run) })
	return 2 * float64(macs) * float64(items) / d.Seconds()
}

// readSet is memory the probe reads: matrices of rows × readCols floats,
// one after another, as a model's layers are.
type readSet struct {
	ws     [][]float32
	rows   int
	x, out []float32
}

// The probe's own set: 32 matrices of 4 MB.
const readRows, readCols, readMats = 1024, 1024, 32

// readBytes is what one pass over the probe's set reads.
const readBytes = 4 * readMats * readRows * readCols

func newReadSet(mats, rows int) *readSet {
	r := &readSet{ws: make([][]float32, mats), rows: rows, x: fill(readCols), out: make([]float32, rows)}
	for i := range r.ws {
		r.ws[i] = fill(rows * readCols)
	}
	return r
}

// pass reads every matrix once and returns the bytes read.
func (r *readSet) pass() int64 {
	for _, w := range r.ws {
		kernels.MatVec(r.out, w, r.x, r.rows, readCols)
	}
	return r.bytes()
}

// bytes is what one pass reads.
func (r *readSet) bytes() int64 { return int64(4 * len(r.ws) * r.rows * readCols) }

// bandwidth is the best rate of passes over r within budget.
func (r *readSet) bandwidth(budget time.Duration) float64 {
	d := best(budget, func() { r.pass() })
	return float64(r.bytes()) / d.Seconds()
}

func readBandwidth() float64 { return newReadSet(readMats, readRows).bandwidth(250 * time.Millisecond) }

// ForWeights is the machine as a model with bytes of weights meets it
// decoding step after step with nothing in between (the TUI): below the
// probe's 128 MB the read bandwidth is measured again over a working set
// of that size (bandwidthAt), and the higher of the two is kept, since a
// model that small may read its weights from the caches the previous step
// filled (the embedded model decoded in 0.172 ms against a bound of 0.231
// at memory's bandwidth). It takes about a tenth of a second and is not
// cached: the caches it finds depend on what else runs. chat plan does not
// use it: it reads the probe's 128 MB between its measured steps.
func (m Machine) ForWeights(bytes int64) Machine {
	if bytes > 0 && bytes < readBytes {
		m.Bandwidth = max(m.Bandwidth, bandwidthAt(bytes))
	}
	return m
}

// bandwidthAt is readBandwidth over about bytes, in matrices of 1 MB.
func bandwidthAt(bytes int64) float64 {
	return newReadSet(max(1, int((bytes+(1<<19))>>20)), 256).bandwidth(100 * time.Millisecond)
}

// Streamer reads the probe's matrices on demand, to measure read bandwidth
// under the same load as something else, interleaved with it (chat plan
// reads as many bytes after each decode step as the step reads).
type Streamer struct{ r *readSet }

// NewStreamer allocates the probe's 128 MB and reads it once (paging it in).
func NewStreamer() *Streamer {
	s := &Streamer{newReadSet(readMats, readRows)}
	s.r.pass()
	return s
}

// Read reads whole passes over the matrices until at least bytes are read,
// and returns the bytes read and the time taken.
func (s *Streamer) Read(bytes int64) (int64, time.Duration) {
	var n int64
	t0 := time.Now()
	for n < bytes {
		n += s.r.pass()
	}
	return n, time.Since(t0)
}

// fill returns n floats in the memory weights get (models/hugepage), so the
// probe reads as fast as a decode step can.
func fill(n int) []float32 {
	v := hugepage.Floats(n)
	for i := range v {
		v[i] = float32(i%7) * 0.01
	}
	return v
}

// cpuName is the processor's model name (Linux), else the architecture.
func cpuName() string {
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}
