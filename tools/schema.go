package tools

import (
	"bytes"
	"encoding/json"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// param is one property of a tool's parameter schema, kept in pi's order.
type param struct {
	name     string
	schema   json.RawMessage
	required bool
}

// typedParam is a property {"type":typ,"description":desc}.
func typedParam(name, typ, desc string, required bool) param {
	b, _ := loop.MarshalNoEscape(struct {
		Type        string `json:"type"`
		Description string `json:"description"`
	}{typ, desc})
	return param{name: name, schema: b, required: required}
}

func stringParam(name, desc string, required bool) param {
	return typedParam(name, "string", desc, required)
}

func numberParam(name, desc string, required bool) param {
	return typedParam(name, "number", desc, required)
}

func boolParam(name, desc string, required bool) param {
	return typedParam(name, "boolean", desc, required)
}

// rawParam is a property with a schema written by the caller.
func rawParam(name string, schema json.RawMessage, required bool) param {
	return param{name: name, schema: schema, required: required}
}

// objectSchema is TypeBox's Type.Object output:
// {"type":"object","properties":{…},"required":[…]}, with "required"
// omitted when no property is required.
func objectSchema(params ...param) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	var req []string
	for i, p := range params {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := loop.MarshalNoEscape(p.name)
		b.Write(name)
		b.WriteByte(':')
		b.Write(p.schema)
		if p.required {
			req = append(req, p.name)
		}
	}
	b.WriteByte('}')
	if len(req) > 0 {
		r, _ := loop.MarshalNoEscape(req)
		b.WriteString(`,"required":`)
		b.Write(r)
	}
	b.WriteByte('}')
	return b.Bytes()
}
