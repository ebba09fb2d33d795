package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestVerdict(t *testing.T) {
	const cleanup = `    testing.go:1464: TempDir RemoveAll cleanup: unlinkat C:\t\001\f: Invalid function.` + "\n"
	ev := func(action, test, output string) string {
		b, _ := json.Marshal(event{Action: action, Test: test, Output: output})
		return string(b) + "\n"
	}
	cases := []struct {
		name, events, want string
		ok                 bool
	}{
		{"pass", ev("run", "TestA", "") + ev("pass", "TestA", "") + ev("pass", "", ""), "ok", true},
		{"real", ev("output", "TestA", "    a_test.go:3: wrong\n") + ev("fail", "TestA", "") + ev("fail", "", ""), "FAIL TestA", false},
		{"cleanup only", ev("output", "TestA", cleanup) + ev("fail", "TestA", "") + ev("fail", "", ""), "ok (1 failed only in t.TempDir's cleanup", true},
		{"wine skip", ev("output", "TestA/s", "    a_test.go:3: under wine: no links\n") + ev("output", "TestA/s", cleanup) +
			ev("fail", "TestA/s", "") + ev("fail", "TestA", "") + ev("fail", "", ""), "ok (1 failed only", true},
		{"unsure", ev("output", "TestA", "    a_test.go:3: no FIFOs\n") + ev("output", "TestA", cleanup) + ev("fail", "TestA", "") + ev("fail", "", ""),
			"UNSURE (failed in the cleanup after saying something, see the log: TestA)", false},
		{"crash", ev("output", "", "panic: boom\n"), "FAIL outside any test", false},
		{"skip", ev("skip", "TestA", "") + ev("pass", "", ""), "ok (1 skipped)", true},
	}
	for _, c := range cases {
		line, ok := verdict(strings.NewReader(c.events))
		if !strings.HasPrefix(line, c.want) || ok != c.ok {
			t.Errorf("%s: %q, %v; want %q…, %v", c.name, line, ok, c.want, c.ok)
		}
	}
}
