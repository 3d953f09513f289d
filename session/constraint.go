package session

import (
	"errors"
	"strings"

	"chat/engine"
	"chat/engine/constrain"
	"chat/session/remote"
)

// Constrained replies (--format json, --json-schema, --regex, --grammar,
// /format): the session compiles the constraint once against the model's
// vocabulary and hands it to the engine with every request; with --remote
// it sends the constraint's text in the fields that server reads.

// constraint is the session's constraint, if any.
type constraint struct {
	spec   constrain.Spec
	m      *constrain.Matcher
	vocab  *constrain.Vocab   // built on first use; the tokenizer never changes
	remote *remote.Constraint // with --remote: what goes to the server
}

// SetConstraint limits the replies from now on to outputs spec accepts; a
// zero Spec (Kind "") removes the limit. On error the setting is unchanged.
func (s *Session) SetConstraint(spec constrain.Spec) error {
	if spec.Kind == "" {
		s.cons = constraint{vocab: s.cons.vocab}
		return nil
	}
	if s.remote != nil {
		return s.setRemoteConstraint(spec)
	}
	if s.cons.vocab == nil {
		s.cons.vocab = constrain.NewVocab(s.model.Tokenizer(), s.model.Info().VocabSize)
	}
	m, err := constrain.Build(spec, s.cons.vocab)
	if err != nil {
		return err
	}
	s.cons.spec, s.cons.m = spec, m
	return nil
}

// setRemoteConstraint reads the constraint's text (its file, for a schema
// or a grammar) and checks that the server takes that kind: the server
// compiles it, and says what is wrong with it.
func (s *Session) setRemoteConstraint(spec constrain.Spec) error {
	src, _, err := spec.Source()
	if err != nil {
		return err
	}
	c := &remote.Constraint{Kind: spec.Kind, Text: src}
	if _, err := s.remote.c.ConstraintFields(*c, s.vals.Mode != "raw"); err != nil {
		return err
	}
	s.cons = constraint{spec: spec, remote: c}
	return nil
}

// Constraint names the constraint on replies ("json", "regex [a-z]+", ...),
// or "" when replies are free.
func (s *Session) Constraint() string {
	if s.cons.m == nil && s.cons.remote == nil {
		return ""
	}
	return s.cons.spec.String()
}

// requestConstraint is the engine's view (a nil interface when none).
func (s *Session) requestConstraint() constrain.Constraint {
	if s.cons.m == nil {
		return nil
	}
	return s.cons.m
}

// constraintStats fills the constraint part of the stats.
func (s *Session) constraintStats(e engine.Stats, st *Stats) {
	st.Constraint = ConstraintStats{Spec: s.Constraint(), Allowed: e.MaskAllowed, MaskTime: e.MaskTime,
		Remote: s.cons.remote != nil}
}

const formatUsage = "/format json | schema FILE|JSON | regex R | grammar FILE | off"

// cmdFormat is /format.
func cmdFormat(s *Session, arg string) (string, error) {
	kind, rest, _ := strings.Cut(arg, " ")
	rest = strings.TrimSpace(rest)
	var spec constrain.Spec
	switch kind {
	case "":
		if c := s.Constraint(); c != "" {
			return "replies are constrained: " + c, nil
		}
		return "replies are free (" + formatUsage + ")", nil
	case "off", "none":
	case "json":
		spec = constrain.Spec{Kind: constrain.KindJSON}
	case "schema", "regex", "grammar":
		if rest == "" {
			return "", errors.New("usage: " + formatUsage)
		}
		spec = constrain.Spec{Kind: kind, Arg: rest}
	default:
		return "", errors.New("usage: " + formatUsage)
	}
	if err := s.SetConstraint(spec); err != nil {
		return "", err
	}
	if spec.Kind == "" {
		return "replies are free", nil
	}
	return "replies are constrained: " + s.Constraint(), nil
}
