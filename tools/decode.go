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
	if d.needed == 0 && utf8.Valid(p) {
		if out != nil {
			*out = append(*out, p...)
		}
		return len(p)
	}
	n := 0
	emit := func(r rune) {
		n += utf8.RuneLen(r)
		if out != nil {
			*out = utf8.AppendRune(*out, r)
		}
	}
	for i := 0; i < len(p); i++ {
		b := p[i]
		if d.needed == 0 {
			d.lower, d.upper = 0x80, 0xBF
			switch {
			case b < 0x80:
				n++
				if out != nil {
					*out = append(*out, b)
				}
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
				emit(utf8.RuneError)
			}
			continue
		}
		if b < d.lower || b > d.upper {
			// The sequence so far is one invalid subpart; b starts afresh.
			d.needed, d.seen = 0, 0
			emit(utf8.RuneError)
			i--
			continue
		}
		d.lower, d.upper = 0x80, 0xBF
		d.cp = d.cp<<6 | rune(b&0x3F)
		d.seen++
		if d.seen == d.needed {
			emit(d.cp)
			d.needed, d.seen = 0, 0
		}
	}
	return n
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
