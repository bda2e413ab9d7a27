package shim

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// skipper keeps the middle of a long output from the client (ops.Spill's
// Skip): past SkipAfter bytes sent, the output is held, only the last
// SkipHold bytes are kept, and what falls out is counted as the client's
// decoder would count it. At the end the counts go as one FrameSkip, then
// the held bytes as output. The client's tail and totals come out as if it
// had seen everything; the spill file (written before) has everything.
type skipper struct {
	after, hold int64

	dec  nodeDecoder // has seen every byte sent or skipped
	sent int64

	held    []byte
	skipped proto.Skip
}

func newSkipper(req *proto.SpillRequest) *skipper {
	if req == nil || !req.Skip || req.SkipHold <= 0 {
		return nil
	}
	return &skipper{after: req.SkipAfter, hold: req.SkipHold}
}

// take returns the part of p to send now; the rest is held.
func (k *skipper) take(p []byte) []byte {
	if len(k.held) == 0 && k.sent+int64(len(p)) <= k.after {
		k.sent += int64(len(p))
		k.dec.feed(p)
		return p
	}
	var now []byte
	if len(k.held) == 0 && k.sent < k.after {
		n := k.after - k.sent
		k.sent = k.after
		now = p[:n]
		k.dec.feed(now)
		p = p[n:]
	}
	k.held = append(k.held, p...)
	if int64(len(k.held)) >= 2*k.hold {
		k.drop(len(k.held) - int(k.hold))
	}
	return now
}

// drop counts the first n held bytes (a few more, to end between
// characters) as skipped.
func (k *skipper) drop(n int) {
	// Where a decoder of everything so far is between characters.
	trial := k.dec
	trial.feed(k.held[:n])
	for trial.needed != 0 && n < len(k.held) {
		trial.feed(k.held[n : n+1])
		n++
	}
	region := k.held[:n]
	nl := bytes.LastIndexByte(region, '\n')
	var last int64
	if nl >= 0 {
		k.skipped.Decoded += k.dec.feed(region[:nl+1])
		k.skipped.Newlines += int64(bytes.Count(region[:nl+1], []byte{'\n'}))
		last = k.dec.feed(region[nl+1:])
	} else {
		last = k.dec.feed(region)
	}
	k.skipped.Decoded += last
	if nl >= 0 {
		k.skipped.LastLine = last
	} else {
		k.skipped.LastLine += last
	}
	k.skipped.Raw += int64(n)
	k.held = k.held[:copy(k.held, k.held[n:])]
}

// finish sends the skip frame, if anything was skipped, and the held bytes.
func (k *skipper) finish(f *frameWriter) {
	if k.skipped.Raw > 0 {
		p, _ := json.Marshal(k.skipped)
		f.buf = proto.AppendFrame(f.buf[:0], proto.FrameSkip, p)
		if _, err := f.w.Write(f.buf); err != nil {
			return
		}
	}
	held := k.held
	k.held = nil
	f.send(held)
}

// nodeDecoder counts what Node's UTF-8 decoder (the WHATWG one) makes of a
// byte stream: each maximal invalid subpart becomes one U+FFFD. It is the
// counting half of tools' utf8Decoder (tools/decode.go), which decodes the
// bytes the client does see; both must agree.
type nodeDecoder struct {
	needed, seen int
	lower, upper byte
}

// feed returns the decoded size of p.
func (d *nodeDecoder) feed(p []byte) int64 {
	var n int64
	for i := 0; i < len(p); {
		if d.needed == 0 {
			if utf8.Valid(p[i:]) {
				return n + int64(len(p)-i)
			}
			if p[i] < utf8.RuneSelf {
				n++
				i++
				continue
			}
			if r, size := utf8.DecodeRune(p[i:]); r != utf8.RuneError || size > 1 {
				n += int64(size)
				i += size
				continue
			}
		}
		emitted, consumed := d.step(p[i])
		n += int64(emitted)
		if consumed {
			i++
		}
	}
	return n
}

// step is tools' utf8Decoder.step, counting.
func (d *nodeDecoder) step(b byte) (int, bool) {
	const fffd = 3
	if d.needed == 0 {
		d.lower, d.upper = 0x80, 0xBF
		switch {
		case b < 0x80:
			return 1, true
		case b >= 0xC2 && b <= 0xDF:
			d.needed = 1
		case b >= 0xE0 && b <= 0xEF:
			if b == 0xE0 {
				d.lower = 0xA0
			} else if b == 0xED {
				d.upper = 0x9F
			}
			d.needed = 2
		case b >= 0xF0 && b <= 0xF4:
			if b == 0xF0 {
				d.lower = 0x90
			} else if b == 0xF4 {
				d.upper = 0x8F
			}
			d.needed = 3
		default:
			return fffd, true
		}
		return 0, true
	}
	if b < d.lower || b > d.upper {
		d.needed, d.seen = 0, 0
		return fffd, false
	}
	d.lower, d.upper = 0x80, 0xBF
	d.seen++
	if d.seen == d.needed {
		// A complete character: 2, 3 or 4 bytes, as many as it took.
		n := d.needed + 1
		d.needed, d.seen = 0, 0
		return n, true
	}
	return 0, true
}
