package session

import (
	"fmt"
	"strconv"
	"strings"

	"chat/models"
	"chat/models/lora"
)

// LoRA adapters (Options.Adapters, --lora) run on top of the model without
// being merged into it, so /lora switches them on and off mid-session: the
// model is rebuilt from the weights without adapters (loraBase) and the
// adapters that are on, and swapped in like a new weight format (the next
// turn re-prefills). With a quantized weight format the adapters are merged
// into the weights as they are quantized (and the float weights without
// adapters stay in memory, to rebuild from).

type adapter struct {
	*lora.Adapter
	on bool
}

// initLora applies Options.Adapters to m at start.
func (s *Session) initLora(m models.Model) (models.Model, error) {
	for _, a := range s.opts.Adapters {
		s.adapters = append(s.adapters, adapter{Adapter: a, on: true})
	}
	return s.withLora(m)
}

// withLora is m with the adapters that are on; it keeps m as the base to
// rebuild from when there are adapters (so without any, a quantized
// model's float weights can be freed).
func (s *Session) withLora(m models.Model) (models.Model, error) {
	if len(s.adapters) == 0 {
		return m, nil
	}
	s.loraBase = m
	var on []*lora.Adapter
	for _, a := range s.adapters {
		if a.on {
			on = append(on, a.Adapter)
		}
	}
	return lora.Apply(m, on)
}

// Adapters lists the LoRA adapters: name, scale and whether each is on.
func (s *Session) Adapters() string {
	if len(s.adapters) == 0 {
		return "no LoRA adapters (start with --lora FILE[:SCALE])"
	}
	var b strings.Builder
	for i, a := range s.adapters {
		state := "off"
		if a.on {
			state = "on"
		}
		fmt.Fprintf(&b, "%d. %s  %s  scale %g  (%s, %d matrices)\n", i+1, a.Name, state, a.Scale, a.Format, len(a.Pairs))
	}
	b.WriteString("/lora N toggles adapter N; /lora on, /lora off: all")
	return b.String()
}

// ToggleLora switches adapters: "N" or a name toggles one, "on" and "off"
// all of them. The model is rebuilt; the next turn re-prefills.
func (s *Session) ToggleLora(which string) error {
	if s.reply != nil {
		return ErrBusy
	}
	if len(s.adapters) == 0 {
		return fmt.Errorf("no LoRA adapters were loaded (start with --lora FILE[:SCALE])")
	}
	old := append([]adapter(nil), s.adapters...)
	switch which {
	case "on", "off":
		for i := range s.adapters {
			s.adapters[i].on = which == "on"
		}
	default:
		i, err := strconv.Atoi(which)
		if err != nil {
			i = 0
			for j, a := range s.adapters {
				if a.Name == which {
					i = j + 1
				}
			}
		}
		if i < 1 || i > len(s.adapters) {
			return fmt.Errorf("no adapter %q: give its number (1–%d) or name, or on/off", which, len(s.adapters))
		}
		s.adapters[i-1].on = !s.adapters[i-1].on
	}
	m, err := s.withLora(s.loraBase)
	if err == nil && s.vals.Quant != "" && s.vals.Quant != "f32" && s.vals.Quant != m.Info().Quant {
		if q, ok := m.(models.Quantizer); ok {
			m, err = q.Quantize(s.vals.Quant)
		}
	}
	if err != nil {
		s.adapters = old
		return err
	}
	s.swapModel(m)
	n := 0
	for _, a := range s.adapters {
		if a.on {
			n++
		}
	}
	s.notices = append(s.notices, fmt.Sprintf("%d of %d LoRA adapters on; the next turn re-prefills the conversation", n, len(s.adapters)))
	return nil
}

func cmdLora(s *Session, arg string) (string, error) {
	if arg == "" {
		return s.Adapters(), nil
	}
	if err := s.ToggleLora(arg); err != nil {
		return "", err
	}
	return s.Adapters(), nil
}
