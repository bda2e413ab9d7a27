package loop

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// coerce applies pi's argument coercions, guided by the schema, to a value
// the caller owns (a deep copy of the arguments): numeric strings become
// numbers, numbers become strings for string fields, "true"/"false" become
// booleans, a single value becomes a one-element array, and null for an
// optional property that does not allow null is removed. Anything else is
// left for validation to report.
func coerce(n *node, v any) any {
	if n == nil {
		return v
	}
	if len(n.types) > 0 && !typeAllowed(n, v) {
		for _, t := range n.types {
			if c, ok := convert(n, v, t); ok {
				v = c
				break
			}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range n.propOrder {
			pv, present := x[k]
			if !present {
				continue
			}
			child := n.props[k]
			if pv == nil && !n.required[k] && len(child.types) > 0 && !child.allows("null") {
				delete(x, k)
				continue
			}
			x[k] = coerce(child, pv)
		}
	case []any:
		for i := range x {
			x[i] = coerce(n.items, x[i])
		}
	}
	return v
}

func typeAllowed(n *node, v any) bool {
	t := jsonType(v)
	if n.allows(t) {
		return true
	}
	return t == "integer" && n.allows("number")
}

var numericString = regexp.MustCompile(`^\s*-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$`)

func convert(n *node, v any, to string) (any, bool) {
	switch to {
	case "number", "integer":
		s, ok := v.(string)
		if !ok || !numericString.MatchString(s) {
			return nil, false
		}
		f, err := strconv.ParseFloat(trimSpace(s), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, false
		}
		if to == "integer" && f != math.Trunc(f) {
			return nil, false
		}
		return f, true
	case "string":
		if f, ok := v.(float64); ok {
			return jsNumber(f), true
		}
	case "boolean":
		switch v {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	case "array":
		if _, isArr := v.([]any); !isArr && v != nil {
			return []any{v}, true
		}
	}
	return nil, false
}

func trimSpace(s string) string {
	i, j := 0, len(s)
	for i < j && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	for j > i && (s[j-1] == ' ' || s[j-1] == '\t' || s[j-1] == '\n' || s[j-1] == '\r') {
		j--
	}
	return s[i:j]
}

// jsNumber formats a number as JavaScript's Number.prototype.toString:
// plain decimals from 1e-6 up to 1e21, exponent form ("1e-7", "1.5e+21")
// outside; -0 is "0".
func jsNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1e-07, 1.5e+21
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + string(sign) + exp
}

// jsonType names a decoded JSON value's type as pi's messages do: whole
// numbers are "integer".
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// deepCopy is the structured clone pi coerces (the raw arguments stay as
// the model sent them for events and messages).
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}
