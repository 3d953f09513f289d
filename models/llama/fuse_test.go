package llama

import (
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/kvcache"
	"chat/models/nn"
	"chat/models/weights"
)

// TestFusedProjections loads every family in integer formats, whose Q, K
// and V and whose gate and up are fused at load (nn.Bind's "fuse" tag),
// and checks the logits against the same weights unfused, bitwise: a
// prefill, a few tokens at once (a speculative round) and decode steps.
func TestFusedProjections(t *testing.T) {
	for _, c := range archCases {
		for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_1} {
			t.Run(c.name+"/"+typ.String(), func(t *testing.T) {
				m, err := Load(writeCase(t, c.spec, typ, c.edit))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				arch := m.Arch()
				byName := map[string]weights.Linear{}
				for _, ts := range nn.Tensors(arch, "gguf") {
					byName[ts.Name] = ts.Linear
				}
				qkv, gateUp, dense := 0, 0, false
				for name, q := range byName {
					dense = dense || strings.HasSuffix(name, "ffn_gate.weight")
					p, ok := strings.CutSuffix(name, "attn_q.weight")
					if !ok {
						continue
					}
					if weights.Whole(q, byName[p+"attn_k.weight"], byName[p+"attn_v.weight"]) != nil {
						qkv++
					}
					if weights.Whole(byName[p+"ffn_gate.weight"], byName[p+"ffn_up.weight"]) != nil {
						gateUp++
					}
				}
				if qkv == 0 {
					t.Errorf("no block's Q, K and V fused")
				}
				// phi3's halves are untagged; MoE experts are not fused.
				if gateUp == 0 && dense && !strings.HasPrefix(c.name, "phi3") {
					t.Errorf("no block's gate and up fused")
				}
				// The same storage, every matrix a plain view: nothing fused.
				plain, err := nn.MapLinears(arch, "gguf", func(_ string, l weights.Linear) (weights.Linear, error) {
					return l.Slice(0, l.Rows()), nil
				})
				if err != nil {
					t.Fatal(err)
				}
				um := m.WithArch(plain)
				seq := []int{1, 261, 5, 99, 263, 42, 7, 200, 3, 17, 88, 150, 9, 61, 33, 250, 12, 70, 140, 6, 190, 44}
				fs, us := kvcache.NewState(m), kvcache.NewState(um)
				for _, step := range [][2]int{{0, len(seq) - 6}, {len(seq) - 6, len(seq) - 2}, {len(seq) - 2, len(seq) - 1}, {len(seq) - 1, len(seq)}} {
					chunk := seq[step[0]:step[1]]
					a, err := fs.Forward(chunk, len(chunk))
					if err != nil {
						t.Fatal(err)
					}
					a = append([]float32(nil), a...)
					b, err := us.Forward(chunk, len(chunk))
					if err != nil {
						t.Fatal(err)
					}
					for i := range a {
						if a[i] != b[i] {
							t.Fatalf("tokens %d..%d: logit %d is %v fused, %v unfused", step[0], step[1], i, a[i], b[i])
						}
					}
				}
			})
		}
	}
}
