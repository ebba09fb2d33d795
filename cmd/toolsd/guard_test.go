//go:build unix

package main

import (
	"runtime/debug"
	"testing"
	"time"
)

func TestSameBuild(t *testing.T) {
	build := func(modified string, deps ...*debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{
			GoVersion: "go1.26.8", Path: "github.com/toolsd/toolsd/cmd/toolsd",
			Main: debug.Module{Path: "github.com/toolsd/toolsd", Version: "(devel)"}, Deps: deps,
			Settings: []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"},
				{Key: "vcs.revision", Value: "0d3f031"}, {Key: "vcs.time", Value: "2026-12-01T04:17:00Z"}, {Key: "vcs.modified", Value: modified}},
		}
	}
	landlock := &debug.Module{Path: "github.com/landlock-lsm/go-landlock", Version: "v0.11.2", Sum: "h1:a"}
	bbolt := &debug.Module{Path: "go.etcd.io/bbolt", Version: "v1.5.0", Sum: "h1:b"}
	older := &debug.Module{Path: "github.com/landlock-lsm/go-landlock", Version: "v0.11.1", Sum: "h1:c"}
	otherRev := build("false", landlock)
	otherRev.Settings[2].Value = "b5b3a39"
	for _, tc := range []struct {
		name        string
		own, theirs *debug.BuildInfo
		skew        time.Duration
		want        bool
	}{
		{"one clean build", build("false", landlock, bbolt), build("false", landlock), time.Hour, true},
		{"another revision", build("false", landlock, bbolt), otherRev, 0, false},
		{"another version of a module", build("false", landlock, bbolt), build("false", older), 0, false},
		{"a module the daemon does not link", build("false", bbolt), build("false", landlock), 0, false},
		{"a modified tree, built together", build("true", landlock), build("true", landlock), -2 * time.Second, true},
		{"a modified tree, built apart", build("true", landlock), build("true", landlock), 2 * time.Hour, false},
		{"modified against clean", build("true", landlock), build("false", landlock), 0, false},
	} {
		if got := sameBuild(tc.own, tc.theirs, tc.skew); got != tc.want {
			t.Errorf("%s: sameBuild = %v, want %v", tc.name, got, tc.want)
		}
	}
}
