package llama

import (
	"testing"

	"chat/models/gguf"
	"chat/models/modeltest"
	"chat/models/testmodels"
)

// TestBatchAlone: for every architecture and variant (archCases), in F32
// and Q8_0, 8 sequences in shared batches — prefills of different lengths,
// decode tokens, a prefill chunk among them, a fork sharing a partly
// filled block — get, bit for bit, the logits each gets alone
// (modeltest.CheckBatch).
func TestBatchAlone(t *testing.T) {
	for _, c := range archCases {
		for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeQ8_0} {
			t.Run(c.name+"-"+typ.String(), func(t *testing.T) {
				m := loadT(t, writeCase(t, c.spec, typ, c.edit))
				modeltest.CheckBatch(t, m, m.Info().VocabSize)
			})
		}
	}
}

// TestBatchAloneStories260K is TestBatchAlone on the real stories260K.
func TestBatchAloneStories260K(t *testing.T) {
	m, err := Load(testmodels.Path(t, "stories260K/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	modeltest.CheckBatch(t, m, m.Info().VocabSize)
}
