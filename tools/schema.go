package tools

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// The input schemas are written by hand, not generated from the argument
// structs: generated schemas spell optional fields as ["null","integer"] and
// add "additionalProperties", which cost about a quarter of the 600-token
// surface on every turn. Every property still carries its type (arrays
// their items): hosts that convert schemas for their models (Codex, Gemini)
// show an untyped parameter as "unknown", drop its description, or drop the
// tool. The tokens come from the descriptions: a closed set of values is an
// enum, not a description that lists them, and a default is "default".
// TestSchemasMatchArguments keeps each schema and its struct in step, and
// TestSchemasSuitStrictHosts keeps them within what strict hosts accept.

// prop is one parameter: its JSON type, its description, and the values it
// may take or its default.
type prop struct {
	name, typ, desc string
	enum            []string
	def             int // for an integer; 0 is none
}

func str(name, desc string) prop   { return prop{name: name, typ: "string", desc: desc} }
func num(name, desc string) prop   { return prop{name: name, typ: "number", desc: desc} }
func intp(name, desc string) prop  { return prop{name: name, typ: "integer", desc: desc} }
func strs(name, desc string) prop  { return prop{name: name, typ: "strings", desc: desc} }
func rows(name, desc string) prop  { return prop{name: name, typ: "rows", desc: desc} }
func boolp(name, desc string) prop { return prop{name: name, typ: "boolean", desc: desc} }

// oneOf is a string parameter that takes one of values; the first is the
// default when it is optional.
func oneOf(name string, values ...string) prop {
	return prop{name: name, typ: "string", enum: values}
}

// intDefault is an integer parameter with a default.
func intDefault(name string, def int) prop { return prop{name: name, typ: "integer", def: def} }

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
		default:
			b.WriteString(`"type":"` + p.typ + `"`)
		}
		if p.enum != nil {
			values, _ := json.Marshal(p.enum)
			b.WriteString(`,"enum":` + string(values))
		}
		if p.def != 0 {
			b.WriteString(`,"default":` + strconv.Itoa(p.def))
		}
		if p.desc != "" {
			desc, _ := json.Marshal(p.desc)
			b.WriteString(`,"description":` + string(desc))
		}
		b.WriteByte('}')
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
