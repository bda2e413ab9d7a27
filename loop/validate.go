package loop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// validator checks one tool's arguments.
//
// Validation is github.com/santhosh-tekuri/jsonschema/v6: a complete,
// maintained implementation of every draft up to 2020-12 whose errors are a
// tree of typed kinds (kind.Required, kind.Type, …) carrying the instance
// location. pi's texts come from its own schema library, so we do not use
// the library's messages: we flatten its error tree and map each kind to
// pi's wording in issueText below. Coercion and the error
// order come from our own small reading of the schema (schema.go), because
// the library neither coerces nor keeps property order.
type validator struct {
	name   string
	schema *jsonschema.Schema
	tree   *node
}

func newValidator(name string, raw json.RawMessage) (*validator, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("loop: tool %s: schema: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat() // pi reports "expected format <format>"
	url := "mem:///tools/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("loop: tool %s: schema: %w", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("loop: tool %s: schema: %w", name, err)
	}
	tree, err := parseNode(raw)
	if err != nil {
		return nil, fmt.Errorf("loop: tool %s: schema: %w", name, err)
	}
	return &validator{name: name, schema: sch, tree: tree}, nil
}

// validate coerces a copy of args and validates it. shown is the JSON the
// failure text quotes after "Received arguments:".
func (v *validator) validate(args any, shown []byte) (map[string]any, error) {
	coerced := coerce(v.tree, deepCopy(args))
	err := v.schema.Validate(coerced)
	if err == nil {
		m, ok := coerced.(map[string]any)
		if !ok {
			// A schema that accepts a non-object; tools take objects.
			return nil, v.failure([]issue{{msg: "expected object, got " + jsonType(coerced)}}, shown)
		}
		return m, nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return nil, fmt.Errorf("Validation failed for tool %q: %v", v.name, err)
	}
	var issues []issue
	flatten(verr, coerced, &issues)
	slices.SortStableFunc(issues, func(a, b issue) int {
		return slices.Compare(v.tree.rank(a.path), v.tree.rank(b.path))
	})
	return nil, v.failure(issues, shown)
}

func (v *validator) failure(issues []issue, shown []byte) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Validation failed for tool %q:", v.name)
	for _, is := range issues {
		p := "root"
		if len(is.path) > 0 {
			p = strings.Join(is.path, ".")
		}
		fmt.Fprintf(&b, "\n  - %s: %s", p, is.msg)
	}
	b.WriteString("\n\nReceived arguments:\n")
	b.Write(shown)
	return errors.New(b.String())
}

type issue struct {
	path []string
	msg  string
}

// flatten turns the library's error tree into pi's lines: one per leaf,
// and one per missing or unknown property at that property's path.
func flatten(e *jsonschema.ValidationError, root any, out *[]issue) {
	loc := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			*out = append(*out, issue{path: with(loc, m), msg: "missing"})
		}
		return
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*out = append(*out, issue{path: with(loc, p), msg: "unknown field"})
		}
		return
	case *kind.AnyOf, *kind.OneOf:
		// A union of plain types reads as pi's "expected a or b, got t".
		var want []string
		for _, c := range e.Causes {
			t, ok := c.ErrorKind.(*kind.Type)
			if !ok || len(c.Causes) > 0 || !slices.Equal(c.InstanceLocation, loc) {
				want = nil
				break
			}
			want = append(want, t.Want...)
		}
		if want != nil {
			*out = append(*out, issue{path: loc, msg: "expected " + strings.Join(want, " or ") + ", got " + jsonType(at(root, loc))})
			return
		}
	}
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			flatten(c, root, out)
		}
		return
	}
	*out = append(*out, issue{path: loc, msg: issueText(e.ErrorKind, at(root, loc))})
}

func issueText(k jsonschema.ErrorKind, got any) string {
	switch k := k.(type) {
	case *kind.Type:
		return "expected " + strings.Join(k.Want, " or ") + ", got " + jsonType(got)
	case *kind.Enum:
		return "expected one of " + joinJSON(k.Want)
	case *kind.Const:
		return "expected one of " + joinJSON([]any{k.Want})
	case *kind.Minimum:
		return "expected >= " + rat(k.Want)
	case *kind.Maximum:
		return "expected <= " + rat(k.Want)
	case *kind.ExclusiveMinimum:
		return "expected > " + rat(k.Want)
	case *kind.ExclusiveMaximum:
		return "expected < " + rat(k.Want)
	case *kind.MinItems:
		return "expected at least " + strconv.Itoa(k.Want) + " items"
	case *kind.MaxItems:
		return "expected at most " + strconv.Itoa(k.Want) + " items"
	case *kind.MinLength:
		return "expected at least " + strconv.Itoa(k.Want) + " characters"
	case *kind.MaxLength:
		return "expected at most " + strconv.Itoa(k.Want) + " characters"
	case *kind.Pattern:
		return "expected to match " + k.Want
	case *kind.Format:
		return "expected format " + k.Want
	case *kind.FalseSchema:
		return "unknown field"
	}
	return k.LocalizedString(printer)
}

var printer = message.NewPrinter(language.English)

func with(loc []string, s string) []string {
	return append(slices.Clip(loc), s)
}

// at returns the value at an instance location.
func at(v any, loc []string) any {
	for _, seg := range loc {
		switch x := v.(type) {
		case map[string]any:
			v = x[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func joinJSON(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		b, _ := MarshalNoEscape(v)
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}

func rat(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return jsNumber(f)
}

// receivedArguments is the text after "Received arguments:": JavaScript's
// JSON.stringify(args, null, 2). The raw bytes are re-serialized token by
// token (stringify.go) to keep the model's key order; prepared arguments
// that differ from the raw ones have no order left and are marshalled with
// sorted keys.
func receivedArguments(raw json.RawMessage, prepared any, changed bool) []byte {
	if changed {
		if b, err := MarshalNoEscape(prepared); err == nil {
			raw = b
		}
	}
	if out, ok := stringify(rawOrEmpty(raw)); ok {
		return out
	}
	return raw
}

func sameValue(a, b any) bool { return reflect.DeepEqual(a, b) }
