package loop

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
)

// stringify writes raw JSON as JavaScript's JSON.stringify(JSON.parse(raw),
// null, 2) does: keys in the order sent, strings re-encoded (escapes such as
// \u00e9 or \/ written as the characters they stand for, nothing
// HTML-escaped), numbers in JavaScript's form (1.0 → 1, 1e-7, 1e+21). It
// walks the tokens instead of decoding into a map, which would lose the
// order. ok is false for invalid JSON.
func stringify(raw []byte) (out []byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b bytes.Buffer
	if err := writeValue(&b, dec, 0); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data
	}
	return b.Bytes(), true
}

func writeValue(b *bytes.Buffer, dec *json.Decoder, depth int) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := t.(type) {
	case json.Delim:
		closing, open := byte('}'), v == '{'
		if v == '[' {
			closing = ']'
		}
		b.WriteByte(byte(v))
		n := 0
		for dec.More() {
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			b.WriteByte('\n')
			b.WriteString(strings.Repeat("  ", depth+1))
			if open {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				writeString(b, k.(string))
				b.WriteString(": ")
			}
			if err := writeValue(b, dec, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		if n > 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat("  ", depth))
		}
		b.WriteByte(closing)
	case string:
		writeString(b, v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil && !math.IsInf(f, 0) {
			return err
		}
		if math.IsInf(f, 0) {
			b.WriteString("null") // JSON.stringify(Infinity)
		} else {
			b.WriteString(jsNumber(f))
		}
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := MarshalNoEscape(s)
	// Go escapes U+2028 and U+2029 for JavaScript source; JSON.stringify
	// does not.
	enc = bytes.ReplaceAll(enc, []byte(`\u2028`), []byte("\u2028"))
	enc = bytes.ReplaceAll(enc, []byte(`\u2029`), []byte("\u2029"))
	b.Write(enc)
}
