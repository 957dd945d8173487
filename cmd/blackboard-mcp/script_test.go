package main

import (
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the command-line scripts in testdata/script against the
// real binary: each script is what a person types, with the output and exit
// status they must see.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(testBinary)+":"+env.Getenv("PATH"))
			for k, v := range map[string]string{
				"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
				"GIT_AUTHOR_NAME": "Ada Person", "GIT_AUTHOR_EMAIL": "ada@example.com",
				"GIT_COMMITTER_NAME": "Ada Person", "GIT_COMMITTER_EMAIL": "ada@example.com",
				"BLACKBOARD_NO_SYNC": "1",
			} {
				env.Setenv(k, v)
			}
			return nil
		},
	})
}
