package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Hosts hand the tools' schemas to their models through their own function
// formats, and the strictest refuse or blur what those formats lack:
// Gemini's function declarations take an OpenAPI subset (one type per
// schema, enum on strings only, no $ref, anyOf, additionalProperties or
// type lists in older releases, which dropped such a tool whole); OpenAI's
// function tools, which Codex converts MCP schemas into, know a property by
// its type and show one without as "unknown", without its description.
// This test holds the schemas to what all of them accept.

// strictKeywords are the schema keywords every host takes.
var strictKeywords = map[string]bool{
	"type": true, "description": true, "enum": true, "items": true, "default": true,
	"properties": true, "required": true,
}

var (
	// Function names: OpenAI allows [a-zA-Z0-9_-]{1,64}; Gemini wants a
	// letter or underscore first.
	strictToolName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`)
	strictParam    = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

func TestSchemasSuitStrictHosts(t *testing.T) {
	s, _ := newTestServer(t)
	for _, raw := range toolsList(t, s) {
		var tool struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"inputSchema"`
		}
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		if !strictToolName.MatchString(tool.Name) {
			t.Errorf("tool name %q is not a function name every host takes", tool.Name)
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
		for _, problem := range strictSchemaProblems(tool.Name, tool.InputSchema, true) {
			t.Error(problem)
		}
	}
}

// strictSchemaProblems lists what a strict host would refuse or blur in
// schema s, found at where; top says s is a tool's input schema.
func strictSchemaProblems(where string, s map[string]any, top bool) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, where+": "+fmt.Sprintf(format, args...)) }
	for k := range s {
		if !strictKeywords[k] {
			bad("keyword %q is not one every host takes", k)
		}
	}
	typ, ok := s["type"].(string)
	switch {
	case !ok:
		bad("no single type (%v)", s["type"])
		return out
	case !slices.Contains([]string{"string", "number", "integer", "boolean", "array", "object"}, typ):
		bad("type %q", typ)
	case top && typ != "object":
		bad("an input schema of type %q; hosts take objects", typ)
	}
	if enum, has := s["enum"]; has {
		values, _ := enum.([]any)
		if typ != "string" || len(values) == 0 {
			bad("an enum on a %s, or an empty one; Gemini takes enums of strings only", typ)
		}
		seen := map[any]bool{}
		for _, v := range values {
			if _, isString := v.(string); !isString || seen[v] {
				bad("enum value %v is not a string, or repeats", v)
			}
			seen[v] = true
		}
		if def, has := s["default"]; has && !slices.Contains(values, def) {
			bad("default %v is not among the enum's values", def)
		}
	}
	if def, has := s["default"]; has && !jsonTypeIs(def, typ) {
		bad("default %v is not a %s", def, typ)
	}
	switch typ {
	case "array":
		items, ok := s["items"].(map[string]any)
		if !ok {
			bad("an array without items")
			break
		}
		out = append(out, strictSchemaProblems(where+"[]", items, false)...)
	case "object":
		props, _ := s["properties"].(map[string]any)
		if top && len(props) == 0 {
			bad("no properties")
		}
		for name, p := range props {
			if !strictParam.MatchString(name) || slices.Contains(hostArguments, name) {
				bad("parameter name %q", name)
			}
			ps, ok := p.(map[string]any)
			if !ok {
				bad("parameter %s is not a schema", name)
				continue
			}
			out = append(out, strictSchemaProblems(where+"."+name, ps, false)...)
		}
		required, _ := s["required"].([]any)
		for _, r := range required {
			if name, _ := r.(string); props[name] == nil {
				bad("required %v is not a property", r)
			}
		}
	}
	return out
}

// jsonTypeIs reports whether a decoded JSON value is of JSON Schema type typ.
func jsonTypeIs(v any, typ string) bool {
	switch x := v.(type) {
	case string:
		return typ == "string"
	case bool:
		return typ == "boolean"
	case float64:
		return typ == "number" || typ == "integer" && x == float64(int64(x))
	case []any:
		return typ == "array"
	case map[string]any:
		return typ == "object"
	}
	return false
}

// The check itself must catch what strict hosts refuse.
func TestStrictSchemaProblemsCatches(t *testing.T) {
	for _, tt := range []struct {
		name   string
		schema string
	}{
		{"untyped property", `{"type":"object","properties":{"uri":{"description":"topic/key"}}}`},
		{"type list", `{"type":"object","properties":{"n":{"type":["integer","null"]}}}`},
		{"array without items", `{"type":"object","properties":{"a":{"type":"array"}}}`},
		{"enum on an integer", `{"type":"object","properties":{"n":{"type":"integer","enum":[1,2]}}}`},
		{"anyOf", `{"type":"object","properties":{"x":{"anyOf":[{"type":"string"}]}}}`},
		{"additionalProperties", `{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}`},
		{"default of the wrong type", `{"type":"object","properties":{"n":{"type":"integer","default":"2"}}}`},
		{"required unknown", `{"type":"object","properties":{"x":{"type":"string"}},"required":["y"]}`},
		{"untyped item", `{"type":"object","properties":{"a":{"type":"array","items":{}}}}`},
	} {
		var s map[string]any
		if err := json.Unmarshal([]byte(tt.schema), &s); err != nil {
			t.Fatal(err)
		}
		if len(strictSchemaProblems("t", s, true)) == 0 {
			t.Errorf("%s: no problem found in %s", tt.name, tt.schema)
		}
	}
}

// Gemini CLI adds wait_for_previous to every tool and passes it on with
// the model's arguments: every tool takes it, and still refuses an
// argument no one defined.
func TestToolsTakeHostArguments(t *testing.T) {
	s, _ := newTestServer(t)
	call := func(name string, args map[string]any) string {
		t.Helper()
		req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": name, "arguments": args}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := json.Marshal(s.MCP().HandleMessage(context.Background(), req))
		if err != nil {
			t.Fatal(err)
		}
		return string(resp)
	}
	for _, tc := range []struct {
		name string
		args map[string]any
	}{ // in this order: the write makes the note the others read and link
		{"update_state", map[string]any{"uri": "h/a", "digest": "A", "body": "a", "expect_version": 0}},
		{"get_state", map[string]any{"uris": []string{"h/a"}}},
		{"list_keys", map[string]any{"topic": "h"}},
		{"search_keys", map[string]any{"q": "a"}},
		{"link_state", map[string]any{"src": "h/a", "rel": "cites", "dst": []string{"h/a"}}},
	} {
		name, args := tc.name, tc.args
		args["wait_for_previous"] = true
		if resp := call(name, args); strings.Contains(resp, `"isError":true`) {
			t.Errorf("%s with wait_for_previous: %s", name, resp)
		}
		delete(args, "wait_for_previous")
		args["wait_for_prev"] = true
		if resp := call(name, args); !strings.Contains(resp, `unknown argument \"wait_for_prev\"`) {
			t.Errorf("%s with an argument no one defined: %s; want it refused", name, resp)
		}
	}
}
