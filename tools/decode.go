package tools

import "unicode/utf8"

// utf8Decoder decodes a byte stream as Node's Buffer.toString("utf-8") does
// (the WHATWG UTF-8 decoder): each maximal invalid subpart becomes one
// U+FFFD. It keeps state across chunks, so a character split between two
// reads decodes correctly.
type utf8Decoder struct {
	cp           rune
	needed, seen int
	lower, upper byte
}

const replacement = "\uFFFD"

// feed decodes p, appends the text to *out when out is non-nil, and returns
// the number of UTF-8 bytes produced.
func (d *utf8Decoder) feed(p []byte, out *[]byte) int {
	n := 0
	for i := 0; i < len(p); {
		if d.needed == 0 && utf8.Valid(p[i:]) {
			// The common case (bash output is mostly valid text).
			if out != nil {
				*out = append(*out, p[i:]...)
			}
			return n + len(p) - i
		}
		if d.needed == 0 {
			// Copy the run of valid characters at once; valid UTF-8
			// decodes the same in both decoders.
			j := i
			for j < len(p) {
				if p[j] < utf8.RuneSelf {
					j++
					continue
				}
				r, size := utf8.DecodeRune(p[j:])
				if r == utf8.RuneError && size == 1 {
					break
				}
				j += size
			}
			if j > i {
				if out != nil {
					*out = append(*out, p[i:j]...)
				}
				n += j - i
				i = j
				continue
			}
		}
		emitted, consumed := d.step(p[i], out)
		n += emitted
		if consumed {
			i++
		}
	}
	return n
}

// step runs the WHATWG decoder on one byte. consumed is false when b ends
// an invalid sequence and must be decoded again from a fresh state.
func (d *utf8Decoder) step(b byte, out *[]byte) (emitted int, consumed bool) {
	emit := func(r rune) int {
		if out != nil {
			*out = utf8.AppendRune(*out, r)
		}
		return utf8.RuneLen(r)
	}
	if d.needed == 0 {
		d.lower, d.upper = 0x80, 0xBF
		switch {
		case b < 0x80:
			return emit(rune(b)), true
		case b >= 0xC2 && b <= 0xDF:
			d.needed, d.cp = 1, rune(b&0x1F)
		case b >= 0xE0 && b <= 0xEF:
			if b == 0xE0 {
				d.lower = 0xA0
			} else if b == 0xED {
				d.upper = 0x9F
			}
			d.needed, d.cp = 2, rune(b&0x0F)
		case b >= 0xF0 && b <= 0xF4:
			if b == 0xF0 {
				d.lower = 0x90
			} else if b == 0xF4 {
				d.upper = 0x8F
			}
			d.needed, d.cp = 3, rune(b&0x07)
		default:
			return emit(utf8.RuneError), true
		}
		return 0, true
	}
	if b < d.lower || b > d.upper {
		// The sequence so far is one invalid subpart; b starts afresh.
		d.needed, d.seen = 0, 0
		return emit(utf8.RuneError), false
	}
	d.lower, d.upper = 0x80, 0xBF
	d.cp = d.cp<<6 | rune(b&0x3F)
	d.seen++
	if d.seen == d.needed {
		d.needed, d.seen = 0, 0
		return emit(d.cp), true
	}
	return 0, true
}

// pending is the number of bytes of an incomplete character held back.
func (d *utf8Decoder) pending() int {
	if d.needed == 0 {
		return 0
	}
	return d.seen + 1
}

// flush ends the stream: an incomplete sequence becomes one U+FFFD.
func (d *utf8Decoder) flush(out *[]byte) int {
	if d.needed == 0 {
		return 0
	}
	d.needed, d.seen = 0, 0
	if out != nil {
		*out = append(*out, replacement...)
	}
	return len(replacement)
}

// decodeString decodes b in one go.
func decodeString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var d utf8Decoder
	out := make([]byte, 0, len(b)+8)
	d.feed(b, &out)
	d.flush(&out)
	return string(out)
}
