package importer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// The reference MCP memory server (@modelcontextprotocol/server-memory)
// keeps a knowledge graph in memory.jsonl, one JSON object a line:
//
//	{"type":"entity","name":"Ada","entityType":"person","observations":["...",...]}
//	{"type":"relation","from":"Ada","to":"Acme","relationType":"works at"}
//
// An entity becomes the note <topic>/<entity type>/<name>: its first
// observation the digest, the others the body as a list, its type the kind;
// its name and type as they were are kept in entity_name and entity_type.
// A relation becomes a link of its source note when its free-form type
// means one of the board's relations (relationMeanings), and is kept as it
// was, in the source note's relations field, either way:
//
//	relations: [{type: works at, to: bb://acme/memory/org/acme, to_name: Acme}]

// relationMeanings maps relation types as people write them (lower case,
// spaces for _ and -) onto the board's relations.
var relationMeanings = map[string]string{}

func init() {
	for rel, phrases := range map[string][]string{
		"depends_on":   {"depends on", "requires", "needs", "uses", "relies on", "blocked by"},
		"derived_from": {"derived from", "based on", "comes from", "inferred from", "extracted from", "generated from"},
		"supersedes":   {"supersedes", "replaces", "obsoletes", "deprecates"},
		"refines":      {"refines", "extends", "elaborates", "improves", "specializes", "details"},
		"cites":        {"cites", "references", "refers to", "mentions", "links to", "see also", "documented in"},
		"part_of": {"part of", "is part of", "belongs to", "member of", "is member of", "contained in", "component of",
			"child of", "works at", "works for", "located in", "subtask of"},
		"contradicts": {"contradicts", "conflicts with", "disagrees with", "disputes", "refutes"},
	} {
		for _, p := range phrases {
			relationMeanings[p] = rel
		}
	}
}

// meaning is the board's relation a relation type means, or "".
func meaning(relationType string) string {
	t := strings.Join(strings.Fields(strings.NewReplacer("_", " ", "-", " ").Replace(strings.ToLower(relationType))), " ")
	return relationMeanings[t]
}

type memoryLine struct {
	Type         string   `json:"type"`
	Name         string   `json:"name"`
	EntityType   string   `json:"entityType"`
	Observations []string `json:"observations"`
	From         string   `json:"from"`
	To           string   `json:"to"`
	RelationType string   `json:"relationType"`
}

// Memory reads a memory.jsonl and plans its notes under topic.
func Memory(r io.Reader, topic string) (*Plan, error) {
	type entity struct {
		memoryLine
		key       string
		links     map[string][]string
		relations []map[string]string
	}
	var order []*entity
	byName := map[string]*entity{}
	var relations []memoryLine
	p := &Plan{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var m memoryLine
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			return nil, fmt.Errorf("line %d is not a JSON object of memory.jsonl: %w", line, err)
		}
		switch m.Type {
		case "entity":
			if m.Name == "" {
				p.Unmapped = append(p.Unmapped, fmt.Sprintf("line %d: an entity without a name", line))
				continue
			}
			if e := byName[m.Name]; e != nil {
				// The server never writes two; a hand-edited file may.
				e.Observations = append(e.Observations, m.Observations...)
				continue
			}
			e := &entity{memoryLine: m}
			byName[m.Name] = e
			order = append(order, e)
		case "relation":
			relations = append(relations, m)
		default:
			p.Unmapped = append(p.Unmapped, fmt.Sprintf("line %d: unknown type %q", line, m.Type))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var k keys
	for _, e := range order {
		typ := e.EntityType
		if typ == "" {
			typ = "entity"
		}
		e.key = k.key(e.Name, topic, typ, e.Name)
	}
	for _, rel := range relations {
		from, to := byName[rel.From], byName[rel.To]
		what := fmt.Sprintf("%s -[%s]-> %s", rel.From, rel.RelationType, rel.To)
		switch {
		case from == nil:
			p.Unmapped = append(p.Unmapped, what+": no entity "+rel.From)
			continue
		case to == nil:
			from.relations = append(from.relations, map[string]string{"type": rel.RelationType, "to_name": rel.To})
			p.Unmapped = append(p.Unmapped, what+": no entity "+rel.To+" (kept in "+from.key+"'s relations)")
			continue
		}
		from.relations = append(from.relations, map[string]string{"type": rel.RelationType, "to": to.key, "to_name": rel.To})
		m := meaning(rel.RelationType)
		if m == "" {
			p.Unmapped = append(p.Unmapped, what+": no link means "+rel.RelationType+" (kept in "+from.key+"'s relations)")
			continue
		}
		if from.links == nil {
			from.links = map[string][]string{}
		}
		from.links[m] = append(from.links[m], to.key)
	}
	for _, e := range order {
		n := Note{Key: e.key, From: e.Name, Kind: kindOf(e.EntityType),
			Fields: map[string]any{"entity_name": e.Name, "entity_type": e.EntityType}, Links: e.links}
		obs := e.Observations
		if len(obs) > 0 {
			var whole string
			n.Digest, whole = digestOf(obs[0])
			if whole == "" {
				obs = obs[1:]
			}
		}
		if n.Digest == "" {
			n.Digest = strings.TrimSpace(e.EntityType + " " + e.Name)
		}
		var body strings.Builder
		for _, o := range obs {
			body.WriteString("- " + strings.ReplaceAll(strings.TrimRight(o, "\n"), "\n", "\n  ") + "\n")
		}
		n.Body = body.String()
		if len(e.relations) > 0 {
			n.Fields["relations"] = e.relations
		}
		if n.Kind == "" && e.EntityType != "" {
			p.Unmapped = append(p.Unmapped, fmt.Sprintf("%s: the entity type %q is no kind (kept in entity_type)", e.key, e.EntityType))
		}
		if n.Links == nil {
			n.Links = map[string][]string{} // a link dropped from the graph goes from the note too
		}
		p.Notes = append(p.Notes, n)
	}
	return p, nil
}
