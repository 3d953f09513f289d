package llama

import (
	"testing"

	"chat/models/gguf"
	"chat/models/kvcache"
	"chat/models/modeltest"
	"chat/models/testmodels"
)

// TestBatchAlone: for every architecture and variant (archCases), in F32
// and Q8_0, 8 sequences in shared batches — prefills of different lengths,
// decode tokens, a prefill chunk among them, a fork sharing a partly
// filled block — get, bit for bit, the logits each gets alone
// (modeltest.CheckBatch), over a float32 KV cache and, in F32, over int8,
// fp8 and int4 ones.
func TestBatchAlone(t *testing.T) {
	for _, c := range archCases {
		for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeQ8_0} {
			kvs := []kvcache.Format{kvcache.F32}
			if typ == gguf.TypeF32 {
				kvs = append(kvs, kvcache.Int8, kvcache.FP8, kvcache.Int4)
			}
			for _, kv := range kvs {
				t.Run(c.name+"-"+typ.String()+"-kv-"+kv.String(), func(t *testing.T) {
					m := loadT(t, writeCase(t, c.spec, typ, c.edit))
					modeltest.CheckBatch(t, m, m.Info().VocabSize, kv)
				})
			}
		}
	}
}

// TestBatchAloneStories260K is TestBatchAlone on the real stories260K, over
// every KV format.
func TestBatchAloneStories260K(t *testing.T) {
	m, err := Load(testmodels.Path(t, "stories260K/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, kv := range []kvcache.Format{kvcache.F32, kvcache.Int8, kvcache.FP8, kvcache.Int4} {
		t.Run(kv.String(), func(t *testing.T) { modeltest.CheckBatch(t, m, m.Info().VocabSize, kv) })
	}
}
