package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"

	"chat/config/settings"
	"chat/engine"
	"chat/engine/sampler"
	"chat/models/quote"
	"chat/session/remote"
)

// A session's replies come from a backend: the engine in this process (the
// default: Session.eng over Session.model), or an OpenAI-compatible server
// (chat --remote: this file). Both give a reply, which the session polls,
// stops and waits for the same way; the conversation, the settings, the
// saved sessions and the commands are the session's either way. With a
// server, what needs the model in this process — weight formats,
// speculation, the KV file, the template, another model — is refused with
// errRemote, and the panels show what the server reports (its /metrics,
// the usage block, timings) instead of the pool's counters.

// reply is a reply being generated: *engine.Reply, or remoteReply.
type reply interface {
	Poll() engine.Delta
	Wait() engine.Result
	Stop()
	SetSampler(sampler.Params)
}

// RemoteOptions name the server of a remote session.
type RemoteOptions struct {
	URL    string // the server's root or its /v1
	APIKey string // sent as "Authorization: Bearer KEY"
	Model  string // the model to ask for ("" = the server's first)

	// Silence bounds how long a reply that has begun may go without a
	// byte from the server (0: remote.ReplySilence).
	Silence time.Duration
}

// errRemote refuses what needs the model in this process.
var errRemote = errors.New("not with --remote: the model runs on the server")

// remoteBackend is the server side of a remote session.
type remoteBackend struct {
	c       *remote.Client
	model   string
	context int // the model's context when the server says; 0 otherwise

	mu      sync.Mutex
	metrics remote.Metrics
	metErr  string // why /metrics could not be read ("" when it was)
	usage   bool   // the last reply came with a usage block
	cached  bool   // which counted the prompt tokens the server had cached
}

// NewRemote starts a session whose replies come from the server ro names.
// It asks the server for its models first, so a wrong URL or key is an
// error here.
func NewRemote(ro RemoteOptions, opts Options) (*Session, error) {
	c, err := remote.New(ro.URL, ro.APIKey)
	if err != nil {
		return nil, err
	}
	if ro.Silence > 0 {
		c.Silence = ro.Silence
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ms, err := c.Models(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.URL(), err)
	}
	b := &remoteBackend{c: c}
	var offered []string
	ownedBy := ""
	for _, m := range ms {
		offered = append(offered, m.ID)
		if ro.Model == "" || m.ID == ro.Model {
			b.model, b.context, ownedBy = m.ID, max(m.Context, 0), m.OwnedBy
			break
		}
	}
	if strings.IndexFunc(b.model, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 || len(b.model) > 256 {
		return nil, fmt.Errorf("%s names its model %s: not a name this app shows", c.URL(), quote.Quote(b.model))
	}
	switch {
	case b.model == "" && ro.Model == "":
		return nil, fmt.Errorf("%s offers no model", c.URL())
	case b.model == "":
		return nil, fmt.Errorf("%s offers %s, not %q (--remote-model)", c.URL(), quote.Cut(fmt.Sprintf("%q", offered), 200), ro.Model)
	}
	v := opts.Settings
	props, perr := c.Props(ctx)
	if v.Mode == "" {
		v.Mode = modeOf(props, perr)
	}
	if perr == nil && props.NCtx > 0 {
		// A reply's context on llama-server is its slot's (-c over
		// --parallel), not the n_ctx_train /v1/models reports.
		b.context = props.NCtx
	}
	if v.Mode != "chat" && v.Mode != "raw" {
		return nil, fmt.Errorf("session: unknown mode %q (want chat or raw)", v.Mode)
	}
	if v.MaxTokens <= 0 {
		v.MaxTokens = settings.Lookup("max_tokens").Default(v.Mode).(int)
	}
	if v.Sampler.PenaltyWindow <= 0 {
		v.Sampler.PenaltyWindow = settings.Lookup("penalty_window").Default("").(int)
	}
	if err := v.Sampler.Validate(); err != nil {
		return nil, err
	}
	v.Quant, v.Spec = "", "off"
	if v.DraftK <= 0 {
		v.DraftK = settings.Lookup("draft_k").Default("").(int)
	}
	if opts.ModelIdentity == "" {
		opts.ModelIdentity = "remote " + c.URL() + " " + b.model
	}
	c.Identify(ctx, ownedBy) // which fields carry a constraint
	s := &Session{opts: opts, vals: v, remote: b}
	if err := s.SetConstraint(opts.Constraint); err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Constraint.Flag(), err) // which of the command line's files
	}
	b.scrape()
	return s, nil
}

// RemoteDefaultMode is the mode a session on the server ro names starts in
// (DefaultMode's twin): raw when the server's /props reports the model has
// no chat template (chat_template "", as llama-server's web UI reads it),
// else chat (a server that says nothing of templates serves chat replies).
func RemoteDefaultMode(ro RemoteOptions) string {
	c, err := remote.New(ro.URL, ro.APIKey)
	if err != nil {
		return "chat" // NewRemote says what is wrong with the URL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return remoteMode(ctx, c)
}

func remoteMode(ctx context.Context, c *remote.Client) string { return modeOf(c.Props(ctx)) }

func modeOf(p remote.Props, err error) string {
	if err == nil && p.ChatTemplate != nil && *p.ChatTemplate == "" {
		return "raw"
	}
	return "chat"
}

// scrape reads the server's /metrics.
func (b *remoteBackend) scrape() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	m, err := b.c.Metrics(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.metrics, b.metErr = m, ""
	if err != nil {
		b.metErr = "no /metrics"
		var se *remote.StatusError
		if errors.As(err, &se) {
			b.metErr = fmt.Sprintf("no /metrics (%d)", se.Status)
		}
	}
}

// server is what the panel shows of the server.
func (b *remoteBackend) server() ServerStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.metrics
	kind := m.Server
	if kind == "" {
		kind = b.c.Kind() // ollama has no /metrics
	}
	if kind == "" {
		kind = "server"
	}
	st := ServerStats{URL: b.c.URL(), Kind: kind, Model: b.model, Metrics: b.metErr,
		Running: orNone(m.Running), Waiting: orNone(m.Waiting), KVUsage: orNone(m.KVUsage),
		PrefixHitRate: orNone(m.PrefixHitRate), Preemptions: orNone(m.Preemptions), SpecAcceptance: orNone(m.SpecAcceptance)}
	missing := m.Missing()
	if b.metErr != "" {
		missing = []string{"anything from /metrics"}
	}
	if b.usage && !b.cached {
		missing = append(missing, "reused prompt tokens")
	}
	st.Missing = strings.Join(missing, ", ")
	return st
}

// orNone is v, or -1 when it is not reported.
func orNone(v float64) float64 {
	if math.IsNaN(v) {
		return -1
	}
	return v
}

// peerKnobs are the sampler knobs a request names by their settings' names
// (settings.Request: DRY, XTC, top-nσ, typical, mirostat), those that
// matter (Active), as llama-server reads them (and chat serve).
func peerKnobs(p sampler.Params) map[string]any {
	v, def := settings.Values{Sampler: p}, settings.Defaults("")
	var out map[string]any
	for _, st := range settings.All() {
		if st.Where&settings.Request != 0 && st.Active(&v, &def) {
			if out == nil {
				out = map[string]any{}
			}
			out[st.Name] = st.Get(&v)
		}
	}
	return out
}

// startRemote sends the conversation (chat mode) or its text (raw mode).
func (s *Session) startRemote() (reply, error) {
	b := s.remote
	p := s.samplerParams()
	req := remote.Request{Model: b.model, MaxTokens: s.vals.MaxTokens, Greedy: p.Greedy, Temperature: p.Temperature,
		TopP: p.TopP, TopK: p.TopK, MinP: p.MinP, PresencePenalty: p.PresencePenalty, FrequencyPenalty: p.FrequencyPenalty,
		RepetitionPenalty: p.RepeatPenalty, Stop: s.vals.Stop, IgnoreEOS: s.vals.IgnoreEOS}
	if !p.Greedy {
		req.Seed = &p.Seed
	}
	req.Peer = peerKnobs(p)
	req.Constraint = s.cons.remote
	if s.vals.Mode == "raw" {
		var t strings.Builder
		for _, m := range s.msgs {
			if m.Role != System {
				t.WriteString(m.Content)
			}
		}
		req.Prompt = t.String()
	} else {
		if s.vals.System != "" {
			req.Messages = append(req.Messages, remote.Message{Role: "system", Content: s.vals.System})
		}
		for _, m := range turns(s.msgs) {
			req.Messages = append(req.Messages, remote.Message{Role: string(m.Role), Content: m.Content})
		}
	}
	// A budget of the whole context (a 256-position model's default) is
	// past it with any prompt: asked without one at once, not refused first.
	req.OmitMaxTokens = b.context > 0 && req.MaxTokens >= b.context
	ctx, cancel := context.WithCancel(context.Background())
	if req.OmitMaxTokens {
		b.fitText(ctx, &req)
	}
	st, err := b.c.Stream(ctx, req)
	if pastContext(err) && req.MaxTokens > 0 && !req.OmitMaxTokens {
		// The budget runs past the context (chat serve and vLLM refuse
		// prompt + max_tokens over it; a model of 256 positions refused
		// every reply of the default 256): ask again without one, which
		// such servers read as the rest of the context, as a local reply
		// stops at the end of the context. That rest is less than the
		// budget, which still bounds what the stream keeps.
		req.OmitMaxTokens = true
		if !b.fitText(ctx, &req) {
			st, err = b.c.Stream(ctx, req)
		} else if st, err = b.c.Stream(ctx, req); pastContext(err) {
			req.OmitMaxTokens = true // the count was off: the server's rest, as above
			st, err = b.c.Stream(ctx, req)
		}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	r := &remoteReply{b: b, st: st, cancel: cancel, onText: s.opts.OnText, done: make(chan struct{})}
	go r.run()
	return r, nil
}

// fitText gives a text completion (raw mode) whose budget runs past the
// context the rest of the context as its budget, counted by the server's
// /tokenize, rather than none: without max_tokens /v1/completions is 16
// tokens (OpenAI's default, chat serve's and vLLM's), not the rest of the
// context. It reports whether it did (a chat request, or a server without
// /tokenize, is left without a budget).
func (b *remoteBackend) fitText(ctx context.Context, req *remote.Request) bool {
	if req.Messages != nil || b.context <= 0 {
		return false
	}
	n, err := b.c.PromptTokens(ctx, b.model, req.Prompt)
	if err != nil || n >= b.context {
		return false
	}
	req.MaxTokens, req.OmitMaxTokens = min(req.MaxTokens, b.context-n), false
	return true
}

// pastContext reports whether err is a server's refusal of a request that
// does not fit the model's context (chat serve's and vLLM's 400 "This
// model's maximum context length is N tokens...", SGLang's "... exceeds the
// model's maximum context length").
func pastContext(err error) bool {
	var se *remote.StatusError
	return errors.As(err, &se) && se.Status == http.StatusBadRequest && strings.Contains(se.Message, "maximum context length")
}

// remoteReply is a reply streamed from a server.
type remoteReply struct {
	b      *remoteBackend
	st     *remote.Stream
	cancel context.CancelFunc
	onText func(string)
	done   chan struct{}

	mu      sync.Mutex
	buf     strings.Builder
	text    strings.Builder
	stats   engine.Stats
	result  engine.Result
	fin     bool
	stopped bool
}

func (r *remoteReply) run() {
	defer close(r.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	go func() { // the panels follow the server while the reply streams
		for {
			select {
			case <-tick.C:
				r.b.scrape()
			case <-r.done:
				return
			}
		}
	}()
	var first time.Time
	pieces, finish := 0, ""
	var usage *remote.Usage
	for r.st.Next() {
		ev := r.st.Event()
		now := time.Now()
		r.mu.Lock()
		if ev.Text != "" {
			if pieces == 0 {
				first = now
				r.stats.TTFT = now.Sub(r.st.Sent)
			} else if d := now.Sub(first).Seconds(); d > 0 {
				r.stats.DecodeTokS = float64(pieces) / d
			}
			pieces++
			r.stats.GenTokens = pieces
			r.buf.WriteString(ev.Text)
			r.text.WriteString(ev.Text)
		}
		if ev.Finish != "" {
			finish = ev.Finish
		}
		if ev.Usage != nil {
			usage = ev.Usage
		}
		r.mu.Unlock()
		if ev.Text != "" && r.onText != nil {
			r.onText(ev.Text)
		}
	}
	err := r.st.Err()
	r.st.Close()
	r.cancel()
	r.b.scrape()
	r.mu.Lock()
	defer r.mu.Unlock()
	if usage != nil {
		r.stats.PromptTokens, r.stats.GenTokens = usage.PromptTokens, usage.CompletionTokens
		r.stats.ReusedTokens = usage.CachedTokens
		if usage.PredictedPerSecond > 0 {
			r.stats.DecodeTokS = usage.PredictedPerSecond
		}
		r.stats.PrefillTokS = usage.PromptPerSecond
		if c := r.b.context; c > 0 {
			// The server's context is the reply's capacity, as the window
			// is a local reply's: a "length" reply whose prompt and text
			// filled it was cut by the context (Result.ContextFull).
			r.stats.KVCap = c
			r.stats.KVUsed = min(usage.PromptTokens+usage.CompletionTokens, c)
		}
	}
	res := engine.Result{Text: r.text.String(), StopID: -1, Stats: r.stats}
	switch {
	case r.stopped:
		res.Reason = engine.ReasonStopped
	case err != nil:
		res.Reason, res.Err = engine.ReasonError, err
	case finish == "length":
		res.Reason = engine.ReasonLength
	default:
		res.Reason = engine.ReasonEOT
	}
	r.result, r.fin = res, true
	r.b.mu.Lock()
	r.b.usage, r.b.cached = usage != nil, usage != nil && usage.Cached
	r.b.mu.Unlock()
}

// Poll implements reply.
func (r *remoteReply) Poll() engine.Delta {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := engine.Delta{Text: r.buf.String(), Stats: r.stats}
	r.buf.Reset()
	if r.fin {
		d.Done, d.Result = true, r.result
	}
	return d
}

// Wait implements reply.
func (r *remoteReply) Wait() engine.Result {
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.result
}

// Stop implements reply: the request is cancelled, which a server takes
// as the client going away (it stops the reply and frees its cache).
func (r *remoteReply) Stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.cancel()
}

// SetSampler implements reply: a server takes the knobs with the next
// request.
func (r *remoteReply) SetSampler(sampler.Params) {}
