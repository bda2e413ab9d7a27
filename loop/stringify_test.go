package loop

import (
	"encoding/json"
	"testing"
)

func TestStringify(t *testing.T) {
	for in, want := range map[string]string{
		`{}`:                                 `{}`,
		`[]`:                                 `[]`,
		` {"b":1, "a":[1,{}], "c":[]} `:      "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    {}\n  ],\n  \"c\": []\n}",
		`{"e":"\u00e9\/<&>\u2028","n":null}`: "{\n  \"e\": \"é/<&>\u2028\",\n  \"n\": null\n}",
		`[1.0, 1e2, -0, 0.0000001, 1e21, 1.5e-10, 123456789012345678901]`: "[\n  1,\n  100,\n  0,\n  1e-7,\n  1e+21,\n  1.5e-10,\n  123456789012345680000\n]",
		`"a\tb\u0001"`: `"a\tb\u0001"`,
		`true`:         `true`,
	} {
		got, ok := stringify([]byte(in))
		if !ok || string(got) != want {
			t.Errorf("%s: got %v %q, want %q", in, ok, got, want)
		}
	}
	for _, bad := range []string{`{`, `{"a":1} x`, `[1,]`} {
		if _, ok := stringify([]byte(bad)); ok {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestJSNumber(t *testing.T) {
	for f, want := range map[float64]string{5: "5", 2.5: "2.5", -3: "-3", 1e21: "1e+21", 1e-7: "1e-7", 1.25e-8: "1.25e-8", 123456.789: "123456.789"} {
		if got := jsNumber(f); got != want {
			t.Errorf("%v: got %s, want %s", f, got, want)
		}
	}
}

func FuzzStringify(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2,{"b":"\u00e9"}]}`, `[1e400]`, `"x"`, `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, ok := stringify([]byte(in))
		if ok != json.Valid([]byte(in)) {
			t.Fatalf("%q: ok=%v, json.Valid disagrees", in, ok)
		}
		if ok && !json.Valid(out) {
			t.Fatalf("%q: output %q is not JSON", in, out)
		}
	})
}
