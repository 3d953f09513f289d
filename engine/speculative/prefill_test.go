package speculative

import (
	"testing"

	"chat/models/nn"
)

// TestVerifyIsNotAPrefill: a round verifies at most 1 + MaxK rows of one
// sequence, fewer than make a prefill (whose float products sum in the
// GEMM's order), so verification keeps the decode's bits and greedy
// speculative output stays plain greedy's.
func TestVerifyIsNotAPrefill(t *testing.T) {
	if MaxK+1 >= nn.PrefillMinTokens {
		t.Fatalf("a round verifies up to %d rows; nn.PrefillMinTokens = %d would put them through the GEMM", MaxK+1, nn.PrefillMinTokens)
	}
}
