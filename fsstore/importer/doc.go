// Package importer brings notes from other memory tools onto the board: the
// reference MCP memory server's memory.jsonl (entities, their observations
// and relations) and folders of Markdown notes with front matter (a
// basic-memory project, an Obsidian vault).
//
// It owns the mapping: names to addresses (Slug, and telling apart two
// names that slug the same), observations to digest and body, free-form
// relation types to the board's links, other tools' front-matter fields to
// fields a note keeps, and the list of what has no place. Each note is
// written as one commit through fsstore, by whoever the view's caller is; a
// note the board already holds as the import would write it is left alone,
// so importing twice changes nothing.
//
// It must not know git, the index or MCP: it plans notes and hands them to
// fsstore.View.Update.
package importer
