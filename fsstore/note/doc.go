// Package note is the board's format, written once: the address grammar and
// how an address maps to files, a note file (YAML front matter kept as a node
// tree, and the body), tables, blob-file naming, what search indexes of a
// note, the program's commit messages and their trailers, and the texts and
// limits of a new workspace.
//
// It is a leaf: it imports the standard library and yaml, never another
// package of this project (fsstore, gitver, the index, tools), so every one
// of them, and the fixtures, can import it instead of copying a rule.
// A test (TestLeaf) and the linter's depguard rule hold it to that.
package note
