// Package fsstoretest holds the checks that every test of the board ends
// with, whatever drove it (the engine in-process, the CLI, a real MCP
// client over stdio or HTTP, several processes, a remote): the board's
// invariants, checked from git and the files alone, so that a path that
// breaks one fails every test that takes it.
//
// CheckVersionsAgree is the one version rule (SPEC section 4): the version
// a write was acknowledged at is the version git holds for that content,
// and the live derived index, a rebuilt one and a fresh clone's agree, note
// by note.
//
// It is for tests only: it imports fsstore and the testing package, and no
// package of the program imports it.
package fsstoretest
