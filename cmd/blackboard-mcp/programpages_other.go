//go:build !linux

package main

// dropProgramPages gives back the program's pages a relay touched where the
// system says which they are (programpages_linux.go); elsewhere it does
// nothing.
func dropProgramPages() {}
