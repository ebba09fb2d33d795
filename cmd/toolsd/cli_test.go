//go:build unix

package main_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/internal/harness"
)

// The binary's command line: what it prints and how it exits.
func TestCommandLine(t *testing.T) {
	bin := harness.Binary(t)
	cases := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--version"}, 0, "toolsd ", ""},
		{[]string{"--help"}, 0, "", "--store"},
		{[]string{"--log-level", "loud"}, 2, "", "--log-level"},
		{[]string{"--no-such-flag"}, 2, "", "flag provided but not defined"},
		{[]string{"extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"mcp", "--help"}, 0, "", "-workspace"},
		{[]string{"checkpoints", "check", "--workspace", "../../testdata/workspace"}, 0, "folders the change journal watches: ", ""},
		{[]string{"checkpoints"}, 2, "", "usage: toolsd checkpoints check"},
		{[]string{"checkpoints", "check", "--workspace", "/no/such/folder"}, 1, "", "toolsd checkpoints check: "},
		{[]string{"__guard", "sh", "-c", "exit 7"}, 7, "", ""},
		{[]string{"__guard", "/no/such/program"}, 127, "", "no such file"},
		{[]string{"__guard", "-grace=50ms", "--", "sh", "-c", "exit 3"}, 3, "", ""},
		{[]string{"__guard", "-grace=soon", "--", "true"}, 2, "", "bad -grace=soon"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			cmd.Env = append(cmd.Environ(), "GORACE=atexit_sleep_ms=0")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code || !strings.Contains(out.String(), c.stdout) || !strings.Contains(errb.String(), c.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, c.code, out.String(), errb.String())
			}
		})
	}
}
