package tools

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// The input schemas are written by hand, not generated from the argument
// structs: generated schemas spell optional fields as ["null","integer"] and
// add "additionalProperties", which cost about a quarter of the 600-token
// surface on every turn. TestSchemasMatchArguments keeps each schema and its
// struct in step.

// prop is one parameter: its JSON type and its description.
type prop struct {
	name, typ, desc string
}

func str(name, desc string) prop  { return prop{name, "string", desc} }
func num(name, desc string) prop  { return prop{name, "number", desc} }
func intp(name, desc string) prop { return prop{name, "integer", desc} }
func strs(name, desc string) prop { return prop{name, "strings", desc} }
func rows(name, desc string) prop { return prop{name, "rows", desc} }

// schema renders a compact object schema; required names come first in the
// list of props.
func schema(required int, props ...prop) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i, p := range props {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + p.name + `":{`)
		switch p.typ {
		case "strings":
			b.WriteString(`"type":"array","items":{"type":"string"}`)
		case "rows":
			b.WriteString(`"type":"array","items":{"type":"array","items":{"type":"string"}}`)
		case "string":
			// No type: JSON Schema's default admits a string, and the
			// description says what goes there. Saves a tenth of the budget.
		default:
			b.WriteString(`"type":"` + p.typ + `"`)
		}
		desc, _ := json.Marshal(p.desc)
		if p.typ != "string" {
			b.WriteByte(',')
		}
		b.WriteString(`"description":` + string(desc) + `}`)
	}
	b.WriteString(`}`)
	if required > 0 {
		names := make([]string, required)
		for i := range names {
			names[i] = `"` + props[i].name + `"`
		}
		b.WriteString(`,"required":[` + strings.Join(names, ",") + `]`)
	}
	b.WriteString(`}`)
	return json.RawMessage(b.String())
}

// withSchema sets a hand-written input schema.
func withSchema(s json.RawMessage) mcp.ToolOption {
	return func(t *mcp.Tool) {
		t.InputSchema = mcp.ToolInputSchema{} // NewTool's default, which would be sent instead
		t.RawInputSchema = s
	}
}

// jsonNames lists the JSON argument names of an argument struct.
func jsonNames(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}
