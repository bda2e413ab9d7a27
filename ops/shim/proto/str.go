package proto

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// Str is a string that survives JSON byte for byte: encoding/json replaces
// invalid UTF-8 with U+FFFD, and paths, names, commands and environment
// entries on Linux are bytes. A valid string is a JSON string; any other is
// {"b": BASE64}.
type Str string

// MarshalJSON implements json.Marshaler.
func (s Str) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(s)) {
		return json.Marshal(string(s))
	}
	return json.Marshal(struct {
		B string `json:"b"`
	}{base64.StdEncoding.EncodeToString([]byte(s))})
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *Str) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '{' {
		var v struct {
			B string `json:"b"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		b, err := base64.StdEncoding.DecodeString(v.B)
		if err != nil {
			return err
		}
		*s = Str(b)
		return nil
	}
	var v string
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*s = Str(v)
	return nil
}

// Strs converts a []string; nil stays nil, an empty slice stays empty.
func Strs(v []string) []Str {
	if v == nil {
		return nil
	}
	out := make([]Str, len(v))
	for i, s := range v {
		out[i] = Str(s)
	}
	return out
}

// Strings converts back; nil stays nil, an empty slice stays empty.
func Strings(v []Str) []string {
	if v == nil {
		return nil
	}
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = string(s)
	}
	return out
}
