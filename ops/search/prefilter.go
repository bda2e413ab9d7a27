package search

import (
	"bytes"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// prefilter finds the places of a chunk where a line may match: every match
// of the pattern contains one of its literals (under Unicode simple case
// folding where the pattern folds case), so a line without any of them
// cannot match. Each literal is looked for through one of its runes, the
// pivot, chosen for the rarity of the first bytes of its case variants; the
// chunk is scanned for those bytes (bytes.IndexByte) and the literal is
// checked around each hit. A hit only makes its line a candidate: the line
// is still verified with the exact matcher, so results are those of the
// matcher alone.
type prefilter struct {
	lits  []foldLit
	pivot []byte // the distinct first bytes of the pivots' variants
}

// foldLit is a literal as a sequence of accepted rune sets (one rune, or a
// case-folding orbit).
type foldLit struct {
	runes [][]rune
	pivot int
	first []byte // the first bytes of the pivot's variants
}

// Bounds keeping the scan cheap: more literals or pivot bytes and the
// prefilter is not used.
const (
	maxPrefilterLits  = 16
	maxPrefilterBytes = 4
)

// lit is a literal of the pattern's tree; fold: matched under case folding.
type lit struct {
	runes []rune
	fold  bool
}

// newPrefilter returns the prefilter of a parsed pattern, or nil when the
// pattern has no usable required literal (such as `\w+` or `a|\d`).
func newPrefilter(tree *syntax.Regexp) *prefilter {
	lits, ok := requiredLits(tree)
	if !ok {
		return nil
	}
	p := &prefilter{}
	for _, l := range lits {
		fl, ok := makeFoldLit(l)
		if !ok {
			return nil
		}
		for _, b := range fl.first {
			if bytes.IndexByte(p.pivot, b) < 0 {
				p.pivot = append(p.pivot, b)
			}
		}
		p.lits = append(p.lits, fl)
	}
	if len(p.pivot) > maxPrefilterBytes {
		return nil
	}
	return p
}

// requiredLits returns literals of which every match of re contains at
// least one, ok false when there are none to offer.
func requiredLits(re *syntax.Regexp) (lits []lit, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []lit{{runes: re.Rune, fold: re.Flags&syntax.FoldCase != 0}}, len(re.Rune) > 0
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLits(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLits(re.Sub[0])
		}
	case syntax.OpAlternate:
		var all []lit
		for _, s := range re.Sub {
			l, ok := requiredLits(s)
			if !ok {
				return nil, false
			}
			all = append(all, l...)
		}
		return all, len(all) <= maxPrefilterLits
	case syntax.OpConcat:
		// Adjacent literals join into one (folded if either is: a superset);
		// of the candidates, the cheapest to scan for wins.
		var (
			best     []lit
			bestCost = -1.0
			run      lit
		)
		consider := func(l []lit) {
			if c := litsCost(l); c >= 0 && (bestCost < 0 || c < bestCost) {
				best, bestCost = l, c
			}
		}
		flush := func() {
			if len(run.runes) > 0 {
				consider([]lit{run})
			}
			run = lit{}
		}
		for _, s := range re.Sub {
			if s.Op == syntax.OpLiteral {
				run.runes = append(run.runes[:len(run.runes):len(run.runes)], s.Rune...)
				run.fold = run.fold || s.Flags&syntax.FoldCase != 0
				continue
			}
			flush()
			if l, ok := requiredLits(s); ok {
				consider(l)
			}
		}
		flush()
		return best, best != nil
	}
	return nil, false
}

// litsCost is the expected cost of scanning for any of lits (the sum of
// their pivots' byte frequencies), -1 when a literal cannot be scanned for.
func litsCost(lits []lit) float64 {
	total := 0.0
	for _, l := range lits {
		fl, ok := makeFoldLit(l)
		if !ok {
			return -1
		}
		total += bytesCost(fl.first)
	}
	return total
}

// makeFoldLit picks the literal's pivot. A literal holding U+FFFD is not
// scanned for: Go's regexp matches it on any invalid byte.
func makeFoldLit(l lit) (foldLit, bool) {
	fl := foldLit{runes: make([][]rune, len(l.runes)), pivot: -1}
	best := 0.0
	for i, r := range l.runes {
		if r == utf8.RuneError || !utf8.ValidRune(r) {
			return foldLit{}, false
		}
		set := []rune{r}
		if l.fold {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				set = append(set, f)
			}
		}
		fl.runes[i] = set
		var first []byte
		for _, v := range set {
			var buf [utf8.UTFMax]byte
			utf8.EncodeRune(buf[:], v)
			if bytes.IndexByte(first, buf[0]) < 0 {
				first = append(first, buf[0])
			}
		}
		if c := bytesCost(first); fl.pivot < 0 || c < best {
			fl.pivot, fl.first, best = i, first, c
		}
	}
	return fl, fl.pivot >= 0
}

// byteRank lists printable ASCII from the most to the least frequent in
// source code (counted over Go's source tree).
const byteRank = ` etrniasoAcludf0p,/().mgh_STE=1IxH"bCyLRPD}{Bk2wOMN:vF4683GV-9U5*z$Q@JW7Y[]X\+!;Kq` + "`" + `Z|<&j'%>#?^~`

// bytesCost is the relative frequency of the bytes (Zipf over byteRank);
// other bytes (control characters, UTF-8 lead bytes) count as rarer than
// any of them, tab as frequent.
func bytesCost(bs []byte) float64 {
	c := 0.0
	for _, b := range bs {
		switch i := strings.IndexByte(byteRank, b); {
		case b == '\t':
			c += 1.0 / 4
		case i >= 0:
			c += 1.0 / float64(i+1)
		default:
			c += 1.0 / 200
		}
	}
	return c
}

// prefilterScan is the state of one scan of a chunk: the next position of
// each pivot byte at or after the scan's position (-1: not looked for yet).
type prefilterScan struct {
	p    *prefilter
	next [maxPrefilterBytes]int
}

func (p *prefilter) scan() prefilterScan {
	s := prefilterScan{p: p}
	for i := range s.next {
		s.next[i] = -1
	}
	return s
}

// find returns the position, at or after pos, of a pivot rune whose literal
// occurs around it, or -1.
func (s *prefilterScan) find(chunk []byte, pos int) int {
	for pos < len(chunk) {
		at, b := len(chunk), byte(0)
		for i, pb := range s.p.pivot {
			if s.next[i] < pos {
				if j := bytes.IndexByte(chunk[pos:], pb); j >= 0 {
					s.next[i] = pos + j
				} else {
					s.next[i] = len(chunk)
				}
			}
			if s.next[i] < at {
				at, b = s.next[i], pb
			}
		}
		if at >= len(chunk) {
			return -1
		}
		for i := range s.p.lits {
			l := &s.p.lits[i]
			if bytes.IndexByte(l.first, b) >= 0 && l.occursAt(chunk, at) {
				return at
			}
		}
		pos = at + 1
	}
	return -1
}

// occursAt reports whether the literal occurs in chunk with its pivot rune
// starting at at.
func (l *foldLit) occursAt(chunk []byte, at int) bool {
	r, n := utf8.DecodeRune(chunk[at:])
	if !hasRune(l.runes[l.pivot], r) {
		return false
	}
	q := at + n
	for _, set := range l.runes[l.pivot+1:] {
		if q >= len(chunk) {
			return false
		}
		r, n := utf8.DecodeRune(chunk[q:])
		if !hasRune(set, r) {
			return false
		}
		q += n
	}
	q = at
	for i := l.pivot - 1; i >= 0; i-- {
		if q <= 0 {
			return false
		}
		r, n := utf8.DecodeLastRune(chunk[:q])
		if !hasRune(l.runes[i], r) {
			return false
		}
		q -= n
	}
	return true
}

func hasRune(set []rune, r rune) bool {
	for _, x := range set {
		if x == r {
			return true
		}
	}
	return false
}
