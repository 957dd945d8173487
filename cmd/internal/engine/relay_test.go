package engine

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestAnsweredIDsAgreesWithAWholeParse compares the relay's reading of an
// engine's line, as far as its id, with a parse of the whole line, on
// messages whose members come in any order. (The relay reads only whole
// lines, ended by a line break: a line cut short by an engine's death is
// not passed on.)
func TestAnsweredIDsAgreesWithAWholeParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 49))
	ids := []string{`1`, `42`, `"a"`, `"x\"y}"`, `"[1,2]"`, `null`, `-3.5e2`}
	values := []string{`{}`, `[]`, `"text"`, `{"content":[{"type":"text","text":"{\"items\":[]}\n"}]}`,
		`{"code":-32602,"message":"bad \"id\": 1"}`, `{"nested":{"id":9,"method":"m"}}`, `[{"id":5}]`, `null`, `true`}
	whole := func(line string) []json.RawMessage {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &m) != nil {
			return nil
		}
		id, hasID := m["id"]
		_, hasMethod := m["method"]
		_, hasResult := m["result"]
		_, hasError := m["error"]
		if hasMethod || !hasID || string(id) == "null" || !hasResult && !hasError {
			return nil
		}
		return []json.RawMessage{id}
	}
	for i := range 3000 {
		members := []string{`"jsonrpc":"2.0"`}
		if rng.IntN(4) > 0 {
			members = append(members, `"id":`+ids[rng.IntN(len(ids))])
		}
		switch rng.IntN(5) {
		case 0:
			members = append(members, `"method":"notifications/resources/updated"`, `"params":`+values[rng.IntN(len(values))])
		case 1:
			members = append(members, `"error":`+values[rng.IntN(len(values))])
		default:
			members = append(members, `"result":`+values[rng.IntN(len(values))])
		}
		rng.Shuffle(len(members), func(a, b int) { members[a], members[b] = members[b], members[a] })
		line := "{" + strings.Join(members, ",") + "}\n"
		if got, want := answeredIDs([]byte(line)), whole(line); !reflect.DeepEqual(got, want) {
			t.Fatalf("line %d %s: got %s, want %s", i, line, got, want)
		}
	}
	batch := `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"x"},{"jsonrpc":"2.0","id":"b","error":{}}]`
	if got := answeredIDs([]byte(batch)); len(got) != 2 || string(got[0]) != "1" || string(got[1]) != `"b"` {
		t.Errorf("batch: got %s", got)
	}
	for _, broken := range []string{``, `{`, `not json`, `{"result":{},"id":`} {
		if got := answeredIDs([]byte(broken)); got != nil {
			t.Errorf("%q: got %s", broken, got)
		}
	}
}

// BenchmarkAnsweredIDs reads the id of a listing's answer as the engine
// writes it: a few kilobytes of result after the id.
func BenchmarkAnsweredIDs(b *testing.B) {
	row := `{"uri":"bb://board/security/runbook-1/audit-2/tls-schema-6","version":8,"digest":"Cache hit rate holds at 64% (in-process write 44)","est_tokens":15}`
	text := `{"items":[` + strings.Repeat(row+",", 99) + row + `]}`
	line, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Result  any    `json:"result"`
	}{"2.0", 7, map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("as-far-as-the-id", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if ids := answeredIDs(line); len(ids) != 1 {
				b.Fatal(ids)
			}
		}
	})
	b.Run("whole", func(b *testing.B) { // what the relay did before
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			var m message
			if json.Unmarshal(line, &m) != nil || m.ID == nil {
				b.Fatal(m)
			}
		}
	})
}
