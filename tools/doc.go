// Package tools serves the board to agents over MCP: exactly five tools
// (update_state, get_state, list_keys, search_keys, link_state), one small
// file each, the result envelope, token budgets, and the mapping of domain
// errors to tool results. Besides the tools, and at no cost in tool surface:
// the notes as resources with their notifications (resources.go), the
// server's log and progress for the sessions that ask (logging.go), and the
// tools' JSON for the command line (cli_json.go).
//
// Every byte here is paid for by a model: tool descriptions and schemas on
// every turn (a test holds the whole surface under 600 o200k tokens),
// responses on every call (compact JSON, or TSV for mode=table, never over
// the caller's budget). The package reaches notes and git only through
// fsstore: it must not import go-git, YAML or fsnotify.
package tools
