package search

import (
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// nfa matches a regular expression whose \b and \B must be Unicode word
// boundaries, as in ripgrep. Go's regexp only has ASCII ones and no hook to
// change that, so this runs the compiled program (regexp/syntax) on a small
// Pike VM that only answers "is there a match in this line". A prefilter —
// the same expression with the boundaries removed, which matches a superset —
// keeps the slow path off lines that cannot match.
type nfa struct {
	prog      *syntax.Prog
	prefilter *regexp.Regexp
	cur, next *sparseSet
}

func newNFA(tree *syntax.Regexp) (*nfa, error) {
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil, err
	}
	loose := stripBoundaries(tree)
	pre, err := regexp.Compile(loose.String())
	if err != nil {
		return nil, err
	}
	n := len(prog.Inst)
	return &nfa{prog: prog, prefilter: pre, cur: newSparseSet(n), next: newSparseSet(n)}, nil
}

// stripBoundaries returns a copy of re with \b and \B replaced by empty
// matches.
func stripBoundaries(re *syntax.Regexp) *syntax.Regexp {
	c := *re
	if c.Op == syntax.OpWordBoundary || c.Op == syntax.OpNoWordBoundary {
		c.Op = syntax.OpEmptyMatch
		return &c
	}
	if len(re.Sub) > 0 {
		c.Sub = make([]*syntax.Regexp, len(re.Sub))
		for i, s := range re.Sub {
			c.Sub[i] = stripBoundaries(s)
		}
	}
	return &c
}

// Match is not safe for concurrent use (the engine uses one per search).
func (m *nfa) Match(line []byte) bool {
	if !m.prefilter.Match(line) {
		return false
	}
	prev := rune(-1)
	pending := m.next
	pending.clear()
	for pos := 0; ; {
		r, w := rune(-1), 0
		if pos < len(line) {
			r, w = utf8.DecodeRune(line[pos:])
		}
		flags := emptyFlags(prev, r, pos == 0)
		cl := m.cur
		cl.clear()
		for _, pc := range pending.dense {
			if m.add(cl, pc, flags) {
				return true
			}
		}
		if m.add(cl, uint32(m.prog.Start), flags) {
			return true
		}
		if r < 0 {
			return false
		}
		pending.clear()
		for _, pc := range cl.dense {
			inst := &m.prog.Inst[pc]
			switch inst.Op {
			case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny:
				if inst.MatchRune(r) {
					pending.add(inst.Out)
				}
			case syntax.InstRuneAnyNotNL:
				if r != '\n' {
					pending.add(inst.Out)
				}
			}
		}
		prev = r
		pos += w
	}
}

// add follows the empty transitions from pc and reports whether the match
// state was reached.
func (m *nfa) add(s *sparseSet, pc uint32, flags syntax.EmptyOp) bool {
	if s.has(pc) {
		return false
	}
	s.add(pc)
	inst := &m.prog.Inst[pc]
	switch inst.Op {
	case syntax.InstMatch:
		return true
	case syntax.InstAlt, syntax.InstAltMatch:
		return m.add(s, inst.Out, flags) || m.add(s, inst.Arg, flags)
	case syntax.InstCapture, syntax.InstNop:
		return m.add(s, inst.Out, flags)
	case syntax.InstEmptyWidth:
		if syntax.EmptyOp(inst.Arg)&^flags == 0 {
			return m.add(s, inst.Out, flags)
		}
	}
	return false
}

func emptyFlags(prev, next rune, atStart bool) syntax.EmptyOp {
	var f syntax.EmptyOp
	if atStart {
		f |= syntax.EmptyBeginText | syntax.EmptyBeginLine
	}
	if prev == '\n' {
		f |= syntax.EmptyBeginLine
	}
	if next < 0 {
		f |= syntax.EmptyEndText | syntax.EmptyEndLine
	}
	if next == '\n' {
		f |= syntax.EmptyEndLine
	}
	if (prev >= 0 && isWordRune(prev)) != (next >= 0 && isWordRune(next)) {
		f |= syntax.EmptyWordBoundary
	} else {
		f |= syntax.EmptyNoWordBoundary
	}
	return f
}

type sparseSet struct {
	sparse []uint32
	dense  []uint32
}

func newSparseSet(n int) *sparseSet {
	return &sparseSet{sparse: make([]uint32, n), dense: make([]uint32, 0, n)}
}

func (s *sparseSet) has(x uint32) bool {
	i := s.sparse[x]
	return int(i) < len(s.dense) && s.dense[i] == x
}

func (s *sparseSet) add(x uint32) {
	if s.has(x) {
		return
	}
	s.sparse[x] = uint32(len(s.dense))
	s.dense = append(s.dense, x)
}

func (s *sparseSet) clear() { s.dense = s.dense[:0] }
