package tools

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

const getStateDescription = "Read notes or uri@N versions within budget_tokens; omissions named."

var getStateSchema = schema(1,
	strs("uris", ""),
	oneOf("mode", "digest", "fields", "table", "full", "ref"),
	strs("fields", ""),
	intDefault("budget_tokens", 2000),
)

type getStateArgs struct {
	URIs   []string `json:"uris"`
	Mode   string   `json:"mode,omitempty"`
	Fields []string `json:"fields,omitempty"`
	Budget int      `json:"budget_tokens,omitempty"`
}

// maxBatch bounds one get_state call.
const maxBatch = 100

func getStateTool() mcp.Tool {
	return mcp.NewTool("get_state",
		mcp.WithDescription(getStateDescription),
		withSchema(getStateSchema),
		readOnly("Read notes"),
	)
}

func (s *Server) getState(ctx context.Context, in getStateArgs) (*mcp.CallToolResult, error) {
	v := s.view(ctx)
	if len(in.URIs) == 0 || len(in.URIs) > maxBatch {
		return nil, invalid("give 1 to %d uris", maxBatch)
	}
	mode, budget, err := readOptions(in.Mode, in.Budget, modeRef, modeDigest, modeFields, modeTable, modeFull)
	if err != nil {
		return nil, err
	}
	if err := checkFields(in.Fields); err != nil {
		return nil, err
	}
	results, cursor, err := v.Summaries(in.URIs)
	if err != nil {
		return nil, err
	}
	parts := make([]part, 0, len(results))
	for _, r := range results {
		p, err := readPart(v, r, mode, in.Fields)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return s.respond(mode, in.Fields, parts, 0, position{cursor: cursor, indexing: v.Indexing()}, budget)
}

// readOptions checks a read's mode and budget, with their defaults.
func readOptions(mode string, budget int, modes ...string) (string, int, error) {
	if mode == "" {
		mode = modeDigest
	}
	ok := false
	for _, m := range modes {
		ok = ok || m == mode
	}
	if !ok {
		return "", 0, invalid("mode must be one of %s", strings.Join(modes, ", "))
	}
	switch {
	case budget == 0:
		budget = DefaultBudget
	case budget < 0 || budget > MaxBudget:
		return "", 0, invalid("budget_tokens is 1 to %d", MaxBudget)
	}
	return mode, budget, nil
}

// readPart renders one address in mode: a JSON item, or a TSV row.
func readPart(v *fsstore.View, r fsstore.SummaryResult, mode string, fields []string) (part, error) {
	if r.Err != nil {
		item := errorItem(r.URI, r.Err)
		if mode == modeTable {
			code, _ := item.get("error").(string)
			return newPart(r.URI, tsvCell(r.URI)+"\t0\t("+code+")", nil), nil
		}
		return newPart(r.URI, item.json(), nil), nil
	}
	sum := r.Summary
	switch mode {
	case modeRef:
		item := orderedItem{}
		item.add("uri", sum.URI)
		item.addVersion(sum.Version)
		item.addCommit(sum.Commit)
		return newPart(sum.URI, item.json(), nil), nil
	case modeDigest:
		item := summaryItem(sum)
		return newPart(sum.URI, item.json(), nil), nil
	}
	if mode == modeTable && slices.IndexFunc(fields, func(f string) bool { return !summaryFields[f] }) < 0 {
		return tableRow(summaryView(sum), fields), nil
	}
	n, err := v.Get(sum.URI, mode == modeFull)
	if errors.Is(err, fsstore.ErrNotFound) {
		item := errorItem(sum.URI, err)
		return newPart(sum.URI, item.json(), nil), nil // deleted between the two reads
	}
	if err != nil {
		return part{}, err
	}
	switch mode {
	case modeTable:
		return tableRow(n, fields), nil
	case modeFields:
		item := orderedItem{}
		item.add("uri", n.URI)
		item.addVersion(n.Version)
		item.addCommit(n.Commit)
		if n.Problem != "" {
			item.add("problem", n.Problem)
		}
		names := fields
		if len(names) == 0 {
			names = defaultFields
		}
		for _, f := range names {
			if v, ok := fieldValue(n, f); ok {
				item.add(f, v)
			}
		}
		if !slices.Contains(fields, "superseded_by") && !slices.Contains(fields, "contradicted_by") {
			addBacklinks(&item, n.SupersededBy, n.ContradictedBy)
		}
		return newPart(n.URI, item.json(), nil), nil
	}
	// full
	head := orderedItem{}
	head.add("uri", n.URI)
	head.addVersion(n.Version)
	head.addCommit(n.Commit)
	if n.Problem != "" {
		head.add("problem", n.Problem)
		return newPart(n.URI, head.json(), nil), nil
	}
	head.add("digest", n.Digest)
	addBacklinks(&head, n.SupersededBy, n.ContradictedBy)
	item := orderedItem{keys: append([]string(nil), head.keys...), vals: append([]any(nil), head.vals...)}
	item.add("body", n.Content)
	body := n.Content
	return newPart(n.URI, item.json(), func(maxTokens int) (string, bool) {
		return cutBody(head, body, maxTokens)
	}), nil
}

// tableRow is a note's row in table mode.
func tableRow(n *fsstore.NoteView, fields []string) part {
	// A superseded or contradicted note says so in its digest cell: every
	// mode but ref tells.
	digest := n.Digest
	if len(n.SupersededBy) > 0 {
		digest += " [superseded_by " + strings.Join(n.SupersededBy, " ") + "]"
	}
	if len(n.ContradictedBy) > 0 {
		digest += " [contradicted_by " + strings.Join(n.ContradictedBy, " ") + "]"
	}
	cells := []string{tsvCell(n.URI), versionCell(n.Version), tsvCell(digest)}
	for _, f := range fields {
		v, _ := fieldValue(n, f)
		cells = append(cells, tsvCell(v))
	}
	return newPart(n.URI, strings.Join(cells, "\t"), nil)
}

// summaryFields are the fields a note's summary holds: a table of them is
// made from the index alone, without reading each note from git.
var summaryFields = map[string]bool{"kind": true, "author": true, "updated": true, "digest": true,
	"est_tokens": true, "bytes": true, "superseded_by": true, "contradicted_by": true, "claimed_by": true, "claim_until": true}

// summaryView is the note as its summary gives it.
func summaryView(s *fsstore.Summary) *fsstore.NoteView {
	return &fsstore.NoteView{URI: s.URI, Version: s.Version, Digest: s.Digest, Kind: s.Kind, Author: s.Author,
		Updated: s.Updated, Bytes: s.Bytes, EstTokens: s.EstTokens, Problem: s.Problem,
		SupersededBy: s.SupersededBy, ContradictedBy: s.ContradictedBy, ClaimedBy: s.ClaimedBy, ClaimUntil: s.ClaimUntil}
}

// respond fits parts into the budget and renders the envelope.
func (s *Server) respond(mode string, fields []string, parts []part, extraOmitted int, at position, budget int) (*mcp.CallToolResult, error) {
	render := renderJSON
	if mode == modeTable {
		uriColumn := "uri"
		if prefix := sharedURIPrefix(parts); prefix != "" {
			// Said once in the header instead of on every row.
			uriColumn = "uri (after " + prefix + ")"
			for i := range parts {
				parts[i] = newPart(parts[i].uri, strings.TrimPrefix(parts[i].text, prefix), nil)
			}
		}
		render = renderTSV(strings.Join(append([]string{uriColumn, "version", "digest"}, fields...), "\t"))
	}
	out, err := fit(budget, parts, extraOmitted, at, render)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(out), nil
}

// sharedURIPrefix is the start every table row's address shares, up to a
// slash past the workspace ("bb://acme/" or "bb://acme/ops/"), or "" when
// there are fewer than two rows or they share less.
func sharedURIPrefix(parts []part) string {
	if len(parts) < 2 {
		return ""
	}
	prefix := parts[0].uri
	for _, p := range parts[1:] {
		n := 0
		for n < len(prefix) && n < len(p.uri) && prefix[n] == p.uri[n] {
			n++
		}
		prefix = prefix[:n]
	}
	prefix = prefix[:strings.LastIndexByte(prefix, '/')+1]
	if !strings.HasPrefix(prefix, "bb://") || strings.Count(prefix, "/") < 3 {
		return ""
	}
	for _, p := range parts {
		if !strings.HasPrefix(p.text, prefix) {
			return ""
		}
	}
	return prefix
}
