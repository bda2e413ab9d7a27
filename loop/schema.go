package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// node is the part of a tool's JSON Schema that pi's coercions and the
// error order need: types, properties in declaration order, required, items.
// Validation itself is done by the jsonschema library (validate.go).
type node struct {
	types     []string
	props     map[string]*node
	propOrder []string
	required  map[string]bool
	items     *node
}

func (n *node) allows(t string) bool {
	for _, x := range n.types {
		if x == t {
			return true
		}
	}
	return false
}

// parseNode reads a schema keeping the order of "properties" (encoding/json
// maps lose it; pi reports errors in declaration order).
func parseNode(raw json.RawMessage) (*node, error) {
	n := &node{}
	if len(bytes.TrimSpace(raw)) == 0 || raw[0] != '{' {
		return n, nil // true/false schemas and the like: nothing to coerce
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if t, ok := m["type"]; ok {
		var one string
		if json.Unmarshal(t, &one) == nil {
			n.types = []string{one}
		} else if err := json.Unmarshal(t, &n.types); err != nil {
			return nil, fmt.Errorf("type: %w", err)
		}
	}
	if r, ok := m["required"]; ok {
		var req []string
		if err := json.Unmarshal(r, &req); err != nil {
			return nil, fmt.Errorf("required: %w", err)
		}
		n.required = map[string]bool{}
		for _, k := range req {
			n.required[k] = true
		}
	}
	if p, ok := m["properties"]; ok {
		keys, err := objectKeys(p)
		if err != nil {
			return nil, fmt.Errorf("properties: %w", err)
		}
		var pm map[string]json.RawMessage
		if err := json.Unmarshal(p, &pm); err != nil {
			return nil, fmt.Errorf("properties: %w", err)
		}
		n.props = map[string]*node{}
		for _, k := range keys {
			c, err := parseNode(pm[k])
			if err != nil {
				return nil, fmt.Errorf("properties.%s: %w", k, err)
			}
			if _, dup := n.props[k]; !dup {
				n.propOrder = append(n.propOrder, k)
			}
			n.props[k] = c
		}
	}
	if it, ok := m["items"]; ok {
		c, err := parseNode(it)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		n.items = c
	}
	return n, nil
}

// objectKeys returns a JSON object's keys in document order.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// rank orders error paths like pi's validator walks the schema: properties
// in declaration order, then undeclared ones by name; array items by index.
func (n *node) rank(path []string) []int {
	r := make([]int, 0, len(path))
	cur := n
	for _, seg := range path {
		if cur == nil {
			r = append(r, 0)
			continue
		}
		switch {
		case cur.props != nil:
			i := len(cur.propOrder)
			for j, k := range cur.propOrder {
				if k == seg {
					i = j
					break
				}
			}
			r = append(r, i)
			cur = cur.props[seg]
		case cur.items != nil:
			i, _ := strconv.Atoi(seg)
			r = append(r, i)
			cur = cur.items
		default:
			r = append(r, 0)
			cur = nil
		}
	}
	return r
}
