package nn

import (
	"errors"
	"fmt"

	"chat/models"
	"chat/models/kvcache"
	"chat/models/weights"
)

// Calibrated formats (weights.Calibrated: GPTQ, AWQ) choose each matrix's
// codes from the activations the matrix multiplies on a text. The float
// model runs over the text with an observer on Pass.Mul, the one place
// every product goes through, which keeps each matrix's input rows; each
// matrix is then re-encoded from its own.

// CalibTokens is the most tokens of calibration text a calibrated
// conversion runs through the model (in windows of the context length).
// On student.pt, GPTQ's top-1 agreement with float32 went from 96.0% with
// 512 tokens to 97.1% with 2048 (see BENCHMARKS.md for today's figures); a
// stage runs all of them, so a 110M model takes minutes on one core.
const CalibTokens = 2048

// QuantizeCalib is Quantize for any format, with text as the calibration
// text of a calibrated one (weights.Calibrated).
func (m *Model) QuantizeCalib(format, text string) (models.Model, error) {
	return m.ConvertCalib(format, text)
}

// ConvertCalib is Convert with a calibration text. A matrix the forward
// pass does not multiply itself (a fused projection used through its
// slices) has no activations of its own and is quantised by round-to-
// nearest in the format's group size instead.
func (m *Model) ConvertCalib(format, text string) (*Model, error) {
	if !weights.Calibrated(format) || format == m.info.Quant {
		return m.Convert(format)
	}
	if text == "" {
		return nil, fmt.Errorf("%s is calibrated on the activations of a text: give one (chat --calib FILE)", format)
	}
	if m.tok == nil {
		return nil, errors.New("nn: the model has no tokenizer to read a calibration text with")
	}
	ids := m.tok.Encode(text)
	if len(ids) < 2 {
		return nil, fmt.Errorf("%s: the calibration text has %d tokens; need at least 2", m.info.Name, len(ids))
	}
	for _, id := range ids {
		if id < 0 || id >= m.info.VocabSize {
			return nil, fmt.Errorf("%s: calibration token %d outside the vocabulary of %d", m.info.Name, id, m.info.VocabSize)
		}
	}
	ids = ids[:min(len(ids), CalibTokens)]
	// Stage by stage in forward order (the matrices that share an input
	// together: q, k and v; then o; gate and up; down; ...), each stage
	// calibrated on the inputs the model computes with every earlier stage
	// already quantized, as GPTQ's reference quantizes layer after layer.
	var shape *weights.ShapeError
	var kept, done int
	conv := map[weights.Linear]weights.Linear{} // original → re-encoded
	// Matrices tagged "keep" (the course's float lm_head) stay as they are:
	// no stage of their own.
	keep := map[weights.Linear]bool{}
	if _, err := mapArch(m.arch, "", func(_ string, k bool, l weights.Linear) (weights.Linear, error) {
		if v, seen := keep[l]; !seen || v {
			keep[l] = k
		}
		return l, nil
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", m.info.Name, err)
	}
	for l, k := range keep {
		if k {
			conv[l] = l
		}
	}
	arch := m.arch
	for {
		stage, acts, err := m.nextStage(arch, ids, conv)
		if err != nil {
			return nil, err
		}
		if len(stage) == 0 {
			break
		}
		for _, l := range stage {
			x := acts[l]
			c, err := weights.ConvertCalib(l, format, x, len(x)/l.Cols())
			if errors.As(err, &shape) {
				c, err = l, nil
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.info.Name, err)
			}
			conv[l] = c
		}
		if arch, err = ConvertArch(m.arch, func(l weights.Linear) (weights.Linear, error) {
			if c, ok := conv[l]; ok {
				return c, nil
			}
			return l, nil
		}); err != nil {
			return nil, fmt.Errorf("%s: %w", m.info.Name, err)
		}
	}
	arch, err := ConvertArch(m.arch, func(l weights.Linear) (weights.Linear, error) {
		c, ok := conv[l]
		if !ok {
			// Never multiplied by itself (a fused projection used through
			// its slices): round to nearest.
			var err error
			if c, err = weights.Convert(l, rtnFormat(format)); errors.As(err, &shape) {
				kept++
				return l, nil
			}
			if err != nil {
				return nil, err
			}
		}
		if c == l {
			kept++
		} else {
			done++
		}
		return c, nil
	})
	return m.converted(arch, err, format, done, kept, shape)
}

// rtnFormat is the round-to-nearest format of a calibrated int4 one:
// "int4-g32-gptq" → "int4-g32".
func rtnFormat(format string) string {
	for i := len(format) - 1; i >= 0; i-- {
		if format[i] == '-' {
			return format[:i]
		}
	}
	return format
}

// nextStage runs arch (m's architecture with the matrices of conv already
// re-encoded) over ids and returns the next stage: the first matrices in
// forward order that are not in conv yet and not re-encoded copies, those
// of them that multiply the same input, with their input rows ([n][cols]),
// or none when every matrix is done.
func (m *Model) nextStage(arch Arch, ids []int, conv map[weights.Linear]weights.Linear) ([]weights.Linear, map[weights.Linear][]float32, error) {
	done := map[weights.Linear]bool{}
	for _, c := range conv {
		done[c] = true
	}
	var stage []weights.Linear
	var input *float32
	acts := map[weights.Linear][]float32{}
	// The first chunk decides the stage: the first matrix not done yet and
	// those right after it that multiply the same input. (A window runs in
	// chunks of MaxChunk tokens whose inputs sit at other addresses: waiting
	// for the window's end dropped the first window's later chunks.)
	deciding := true
	observe := func(w weights.Linear, x Rows) {
		if _, ok := conv[w]; ok || done[w] || x.N == 0 {
			return
		}
		if deciding {
			if _, ok := acts[w]; !ok && (input == nil || input == &x.D[0]) {
				input = &x.D[0]
				stage = append(stage, w)
				acts[w] = nil
			} else {
				deciding = false
			}
		}
		if _, ok := acts[w]; ok {
			acts[w] = append(acts[w], x.D[:x.N*x.W]...)
		}
	}
	err := m.activations(arch, ids, observe, func() { deciding = false })
	return stage, acts, err
}

// activations runs arch over ids, windows of the context length from
// position 0, with observe on every product; window is called after each
// window.
func (m *Model) activations(arch Arch, ids []int, observe func(w weights.Linear, x Rows), window func()) error {
	r := NewRunner(arch, m.info.VocabSize)
	r.p.observe = observe
	seq, err := kvcache.Private(m, kvcache.DefaultBlockSize)
	if err != nil {
		return err
	}
	ctx := m.info.ContextLength
	for off := 0; off < len(ids); off += ctx {
		seq.Truncate(0)
		var b models.Batch
		b.AddRun(0, 0, ids[off:min(len(ids), off+ctx)], 1)
		if _, err := r.Forward(&b, []models.KV{seq}); err != nil {
			return fmt.Errorf("%s: calibration: %w", m.info.Name, err)
		}
		window()
	}
	seq.Free()
	return nil
}
