package engine

import (
	"slices"
	"sync"
	"testing"
	"time"

	"chat/engine/sampler"
	"chat/models/load"
)

// BenchmarkViewsOverhead: decoding speed with every view of the TUI on
// against every view off, in one run, as the ratio on/off. Each iteration
// generates two 900-token replies of the embedded model (the TUI's
// default), sampled, one without and one with the views (which goes first
// alternates), while a poller does what the TUI does at 30 Hz: Poll, and
// with the views on the KV block map too (the step records are made at
// that rate, the token marks on every token). The speeds are each reply's
// decode tok/s; reported are the median speeds, the median of the ratios
// of the two replies of an iteration (neighbours in time, so a change in
// the machine's load cancels out) and the step records a reply with the
// views made. Run:
//
//	go test ./engine -run '^$' -bench ViewsOverhead -benchtime 20x
func BenchmarkViewsOverhead(b *testing.B) {
	m, err := load.Embedded()
	if err != nil {
		b.Fatal(err)
	}
	e := New(m)
	defer e.Close()
	req := Request{Prompt: []int{m.Tokenizer().EOT()}, MaxTokens: 900,
		Sampler: sampler.Params{Temperature: 0.8, TopP: 0.95, Seed: 7}}
	records := 0
	reply := func(views bool) float64 {
		r := req
		if views {
			r.Observe = ObserveTokens | ObserveSteps
		}
		rr, err := e.Start(r)
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			var bm []BlockState
			tick := time.NewTicker(time.Second / 30)
			defer tick.Stop()
			for {
				select {
				case <-rr.Done():
					return
				case <-tick.C:
				}
				if rr.Poll().Step != nil {
					records++
				}
				if views {
					bm = e.BlockMap(rr, bm)
				}
			}
		})
		res := rr.Wait()
		wg.Wait()
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		return res.Stats.DecodeTokS
	}
	reply(false) // warm up
	var off, on, ratio []float64
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			off = append(off, reply(false))
			on = append(on, reply(true))
		} else {
			on = append(on, reply(true))
			off = append(off, reply(false))
		}
		ratio = append(ratio, on[len(on)-1]/off[len(off)-1])
	}
	median := func(x []float64) float64 {
		slices.Sort(x)
		return x[len(x)/2]
	}
	b.ReportMetric(median(off), "off_tok/s")
	b.ReportMetric(median(on), "on_tok/s")
	b.ReportMetric(median(ratio), "on/off")
	b.ReportMetric(float64(records)/float64(len(on)), "records/reply")
}
