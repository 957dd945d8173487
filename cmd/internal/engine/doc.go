// Package engine lets every agent's `serve` share one engine per board.
//
// The first `serve` on a board that finds no engine starts one: a detached
// `blackboard-mcp engine` process that holds the board (its workspace, the
// index, the watcher of people's edits, the MCP server) and serves local
// connections on a Unix socket. Each `serve` over stdio is then a relay: it
// passes its MCP client's lines to the engine and back, with the caller's
// identity, and sends a call again when the engine died under it. The
// command line's reads and writes, `view`'s page and `serve --http` go to
// it too.
//
// Its rooms:
//   - place.go: where a board's engine lives (the socket, in a directory
//     only its user reaches) and the lock that makes it the board's one
//     engine.
//   - wire.go: the first lines of a connection (hello, welcome): who
//     connects, and with which protocol.
//   - host.go: the engine's side: accept, admit, serve each connection as
//     an MCP session, and exit once idle or once the board is gone.
//   - session.go: one connection as an MCP session of the library's server.
//   - relay.go: the relay's side: connect (starting the engine when none
//     runs), pass lines, and on a lost engine reconnect and send again what
//     was unanswered, writes marked with their id so none applies twice.
//   - command.go: a command line's verb run by the engine (put, get, ...),
//     its output and exit code sent back.
//   - http.go: HTTP served by the engine (the board's page for people,
//     serve --http's endpoint for agents) over connections of the process
//     in front, which sends a request again to a new engine when the last
//     died under it.
//
// It knows MCP's JSON-RPC framing and mcp-go's session interfaces, not the
// board: the caller admits a hello (access tokens), builds the server, and
// hands it the command line's verbs and the page's handler.
package engine
