// Package models knows model files and their math: readers for torch .pt and
// GGUF files, tokenizers, and the architectures. It knows nothing about chats,
// sampling or the UI. Every architecture implements Model; the engine drives it
// with batches of tokens over paged KV caches (Runner, Batch, KV), or one
// sequence at a time through State.
package models

import (
	"errors"

	"chat/models/kernels"
)

// Info describes a loaded model for the panels, headless stats and the engine.
type Info struct {
	Name          string // file base name or metadata name
	Arch          string // "classic", "modern", "llama", ...
	Format        string // "torch", "gguf"
	Quant         string // "f32", "int8", "q8_0", ...
	VocabSize     int    // rows of the output layer
	ContextLength int    // the default window: the positions the model was trained for, or fewer (TrainContext)
	Layers        int
	Embed         int
	Heads         int
	KVHeads       int
	Params        int64 // parameters, a tied matrix counted once
	WeightBytes   int64 // bytes of weights read per decoded token

	// Arith is what most of its products run on (float32 FMAs or int8
	// dot products): the peak models/plan bounds a prefill by.
	Arith kernels.Arith

	// TrainContext, when not 0, is the longer context the model was
	// trained for and runs: a window up to it is there for the asking
	// (engine.Options.Context, --ctx-size), at the cost of its KV cache.
	TrainContext int

	// Window says what generation does when the cache is full.
	Window WindowRule

	// Stage is the post-training stage a checkpoint carries ("sft", ...), or "".
	Stage string

	// Pooling is how an embedding is made of the final hidden states (a
	// GGUF file's pooling_type; a generative model's: the mean).
	Pooling Pooling
}

// Pooling is how an embedding is made of a sequence's final hidden states
// (llama.cpp's pooling types).
type Pooling int

const (
	PoolMean Pooling = iota // their mean (a generative model's, as ollama pools it)
	PoolCLS                 // the first position's
	PoolLast                // the last position's (Qwen3-Embedding)
	PoolRank                // a reranker's score, which Embed does not make
)

// MaxContext is the longest window the model runs: the context it was
// trained for (a longer --ctx-size is cut to it).
func (in Info) MaxContext() int { return max(in.ContextLength, in.TrainContext) }

// ChatTuned says the checkpoint went through a post-training stage: it
// chats by default, and its GGUF conversion carries the chat template.
func (in Info) ChatTuned() bool { return in.Stage != "" && in.Stage != "pretrain" }

// WindowRule is what an architecture does when generation outgrows the context.
type WindowRule int

const (
	// WindowSlide re-runs the last ContextLength tokens from position 0 every
	// step once the context is full (the course's classic generate).
	WindowSlide WindowRule = iota
	// WindowHalf keeps the latest ContextLength/2 tokens and re-prefills them
	// from position 0 when the cache is full (the course's modern generate).
	WindowHalf
)

// Model is a loaded network: immutable, and shared by any number of
// Runners. Its keys and values live in KV handles (kv.go) that the caller
// owns, so one model serves many sequences at once.
type Model interface {
	Info() Info
	Tokenizer() Tokenizer
	// KVLayout is the shape of one cached position.
	KVLayout() KVLayout
	// NewRunner returns the working memory for forward passes of this model.
	NewRunner() Runner
}

// Runner runs forward passes of one model. It is not safe for concurrent
// use; give each goroutine its own.
type Runner interface {
	// Forward runs a batch of tokens from any number of sequences (batch.go)
	// in one pass that reads each weight once: it appends every token's
	// keys and values to its sequence's KV handle and returns the logits of
	// the tokens whose Logits flag is set, in batch order, [rows][VocabSize].
	// The slice is owned by the Runner and valid until the next call. It
	// returns an error only for a bad batch (an id outside the vocabulary,
	// positions that do not continue their sequence, a full cache); then no
	// KV handle has changed. A decode step allocates nothing.
	Forward(b *Batch, kv []KV) ([]float32, error)
}

// Windowed is a Model whose computation depends on the window it runs: a
// GGUF model with LongRoPE's two factor sets (Phi-3 128k) takes the long
// ones for a window past its original context, as llama.cpp does. ForWindow
// returns the model for a window of n positions (itself when nothing
// changes); the engine asks it once it knows the window (Options.Context).
type Windowed interface {
	ForWindow(n int) Model
}

// Quantizer is a model that can re-encode its weights in another format
// (models/weights' names: "int8", "q8_0", ...). The copy shares what it does
// not re-encode and needs its own Runners and KV caches.
type Quantizer interface {
	Quantize(format string) (Model, error)
}

// CalibQuantizer is a Quantizer that can also make the formats calibrated
// on the activations of a text (GPTQ, AWQ: models/weights.Calibrated);
// other formats ignore the text.
type CalibQuantizer interface {
	QuantizeCalib(format, text string) (Model, error)
}

// ControlTokens is a Tokenizer whose vocabulary marks control tokens (a
// GGUF's token_type CONTROL: <|eot_id|>, <|reserved_special_token_0|>...).
// A reply renders them as nothing, as llama.cpp does without --special;
// their text stays what TokenBytes gives.
type ControlTokens interface {
	IsControl(id int) bool
}

// Tokenizer turns text into ids and ids back into bytes.
type Tokenizer interface {
	// Encode tokenizes text as ordinary text: special-token strings are plain
	// characters (the course's encode_ordinary; llama.cpp parse_special=false).
	// It adds no BOS.
	Encode(text string) []int
	// EncodeSpecial is Encode, except that special-token strings in text become
	// their ids (the course's encode with allowed_special="all").
	EncodeSpecial(text string) []int
	// TokenBytes returns the raw bytes token id stands for (a special token gives
	// its literal text; an id out of range gives nil). Concatenating the pieces
	// of a sequence and decoding as UTF-8 gives its text. The slice may be
	// shared with the tokenizer (the engine calls this for every decoded
	// token): callers must not modify it.
	TokenBytes(id int) []byte
	// Decode is the text of ids with invalid UTF-8 replaced by U+FFFD.
	Decode(ids []int) string
	// Size is the number of ids the tokenizer knows.
	Size() int
	// EOT is the end-of-text / end-of-turn id, or -1.
	EOT() int
	// BOS is the id prepended to a prompt, or -1 when the model takes none.
	BOS() int
}

// AppendsEOS is a tokenizer whose file asks for an id after a text
// tokenized with its special tokens (llama.cpp's add_eos_token):
// AppendedEOS is that id, or -1.
type AppendsEOS interface {
	AppendedEOS() int
}

// ErrNoEmbeddings is Embed's error for a model whose pooling makes no
// embedding (a reranker's).
var ErrNoEmbeddings = errors.New("the model pools for ranking (or by a type this app does not know), not into embeddings")

// Embedder is a model that gives a token sequence's embedding (nn.Model:
// the mean of its final hidden states), for chat serve's embedding routes.
type Embedder interface {
	Embed(ids []int) ([]float32, error)
}
