//go:build unix

package project_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/project"
	"github.com/toolsd/toolsd/registry"
)

// TestExamples loads the demo workspace's example tools and runs each for real, with
// arguments that pass their schemas, as the pipeline would.
func TestExamples(t *testing.T) {
	ws, err := filepath.Abs("../testdata/workspace")
	if err != nil {
		t.Fatal(err)
	}
	tools, diags := project.NewLoader(project.Options{Workspace: ws}).Load()
	if len(diags) != 0 {
		t.Fatalf("diagnostics: %+v", diags)
	}
	reg := registry.New()
	reg.SetSource(registry.SourceProject, tools, nil)
	if got := reg.Catalog().Diagnostics(); len(got) != 0 {
		t.Fatal(got)
	}
	var ids []string
	for _, e := range reg.Catalog().Entries() {
		ids = append(ids, e.ID)
	}
	if want := []string{"fmt_file", "go_test_pkg", "sqlite_query"}; !slices.Equal(ids, want) {
		t.Fatalf("tools %v, want %v", ids, want)
	}
	cases := []struct {
		tool, args string
		needs      string // a program that must be on PATH
		want       string
		wantErr    string
		invalid    bool // the schema must refuse the args
	}{
		{tool: "sqlite_query", needs: "sqlite3", args: `{"query": "SELECT title FROM books WHERE year < 1980"}`, want: "The Mythical Man-Month"},
		{tool: "sqlite_query", needs: "sqlite3", args: `{"query": "DELETE FROM books"}`, wantErr: "readonly"},
		{tool: "sqlite_query", args: `{"query": "SELECT \"x\""}`, invalid: true},
		{tool: "sqlite_query", needs: "sqlite3", args: `{"query": "SELECT 1", "database": "nope.db"}`, wantErr: "no database file nope.db"},
		{tool: "fmt_file", needs: "gofmt", args: `{"path": "hello/hello.go", "check": true}`, want: "hello/hello.go is already formatted."},
		{tool: "fmt_file", args: `{"path": "../x.go"}`, invalid: true},
		{tool: "go_test_pkg", needs: "go", args: `{"package": "./hello", "run": "TestGreet", "verbose": true}`, want: "--- PASS: TestGreet"},
		{tool: "go_test_pkg", args: `{"package": "hello; rm -rf /"}`, invalid: true},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			e, _ := reg.Catalog().Lookup(tc.tool)
			err := e.Validate([]byte(tc.args))
			if tc.invalid {
				if err == nil {
					t.Fatal("the schema let the arguments through")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := exec.LookPath(tc.needs); err != nil {
				t.Skipf("%s is not installed", tc.needs)
			}
			var fc fakeCall
			res, err := e.Execute(context.Background(), fc.call(), json.RawMessage(tc.args))
			out := fc.out.String()
			if res != nil {
				out += res.Output
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q (output %q)", err, tc.wantErr, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output %q does not contain %q", out, tc.want)
			}
		})
	}
}
