package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The checked-in protocol.ts is what the generator writes from package protocol.
func TestProtocolTSIsCurrent(t *testing.T) {
	want, err := generate("../../protocol", defaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../editor-ext/src/protocol.ts")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) == string(want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	line := func(ls []string) string {
		if i < len(ls) {
			return ls[i]
		}
		return "(end of file)"
	}
	t.Fatalf("editor-ext/src/protocol.ts is not current with protocol/*.go: run `go generate ./protocol`.\n"+
		"first difference at line %d:\n  checked in: %s\n  generated:  %s", i+1, line(g), line(w))
}

// writePkg writes a package protocol of one file into a new folder and returns the folder.
func writePkg(t *testing.T, src string) string {
	dir := filepath.Join(t.TempDir(), "protocol")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "protocol.go"), []byte("package protocol\n\n"+src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMapping(t *testing.T) {
	dir := writePkg(t, `import (
	"encoding/json"
	"time"
)

const (
	MethodFooBar = "foo/bar"
	// CodeOops is an error.
	CodeOops = -32001
)

// Colors.
const (
	ColorRed  = "red" // warm
	ColorBlue = "blue"
)

const Answer = 42

// Base is embedded.
type Base struct {
	ID string `+"`json:\"id\"`"+`
}

// Thing has one field of each kind.
type Thing struct {
	Base
	// Name is documented.
	Name     string            `+"`json:\"name\"`"+`
	Color    string            `+"`json:\"color,omitempty\"`"+`
	Count    int64             `+"`json:\"count,omitzero\"`"+`
	Flag     *bool             `+"`json:\"flag\"`"+`
	At       time.Time         `+"`json:\"at\"`"+`
	Raw      json.RawMessage   `+"`json:\"raw,omitempty\"`"+`
	Bytes    []byte            `+"`json:\"bytes\"`"+`
	Tags     map[string][]int  `+"`json:\"tags\"`"+`
	Kids     []*Base           `+"`json:\"kids\"`"+`
	Dash     string            `+"`json:\"x-y\"`"+`
	Big      int               `+"`json:\"big,string\"`"+`
	Untagged string
	Skipped  string `+"`json:\"-\"`"+`
	hidden   string
}

type Kind string
`)
	cfg := config{unions: map[string]string{"Color": "ColorBlue"}, fields: map[string]string{"Thing.Color": "Color"}}
	out, err := generate(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		header,
		"export const Methods = {\n  fooBar: 'foo/bar',\n} as const;",
		"export const ErrorCodes = {\n  /** CodeOops is an error. */\n  Oops: -32001,\n} as const;",
		"/**\n * Colors.\n *\n * - 'red': warm\n */\nexport type Color = 'red' | 'blue';",
		"export const Answer = 42;",
		"/** Base is embedded. */\nexport interface Base {\n  id: string;\n}",
		"/** Thing has one field of each kind. */\nexport interface Thing extends Base {\n" +
			"  /** Name is documented. */\n  name: string;\n" +
			"  color?: Color;\n" +
			"  count?: number;\n" +
			"  flag: boolean | null;\n" +
			"  at: string;\n" +
			"  raw?: unknown;\n" +
			"  bytes: string;\n" +
			"  tags: Record<string, number[]> | null;\n" +
			"  kids: Base[];\n" +
			"  'x-y': string;\n" +
			"  big: string;\n" +
			"  Untagged: string;\n" +
			"}",
		"export type Kind = string;",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing\n%s\nin\n%s", want, out)
		}
	}
	for _, not := range []string{"Skipped", "hidden", "any"} {
		if strings.Contains(string(out), not) {
			t.Errorf("%q in\n%s", not, out)
		}
	}
}

// What the generator cannot map fails with the name of what it is, never as any.
func TestUnmappable(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		cfg       config
		want      string
	}{
		{"chan", "type T struct{ C chan int `json:\"c\"` }", config{}, "T.C: Go type chan int has no TypeScript mapping"},
		{"int map key", "type T struct{ M map[int]string `json:\"m\"` }", config{}, "T.M: Go type map[int]string has no TypeScript mapping"},
		{"foreign type", "import \"net/url\"\ntype T struct{ U *url.URL `json:\"u\"` }", config{}, "T.U: Go type url.URL has no TypeScript mapping"},
		{"unknown type", "type T struct{ X complex128 `json:\"x\"` }", config{}, "T.X: Go type complex128"},
		{"inline struct", "type T struct{ S struct{ A int } `json:\"s\"` }", config{}, "T.S: Go type struct{…}"},
		{"interface", "type T struct{ S interface{ M() } `json:\"s\"` }", config{}, "T.S: Go type interface{…}"},
		{"unexported type", "type t struct{}\ntype T struct{ S t `json:\"s\"` }", config{}, "T.S: Go type t"},
		{"generic", "type T[X any] struct{ S X `json:\"s\"` }", config{}, "type T: generic types"},
		{"iota", "const (\n\tA = iota\n\tB\n)", config{}, "constant A"},
		{"json option", "type T struct{ S string `json:\"s,inline\"` }", config{}, `field S has json option "inline"`},
		{"stale field", "type T struct{ S string `json:\"s\"` }", config{fields: map[string]string{"T.Gone": "unknown"}}, "T.Gone: package protocol has no such field"},
		{"stale union", "const A = \"a\"", config{unions: map[string]string{"U": "Gone"}}, "union U: no constant Gone"},
		{"union on int", "const A = \"a\"\ntype T struct{ N int `json:\"n\"` }", config{unions: map[string]string{"U": "A"}, fields: map[string]string{"T.N": "U"}}, "field T.N: union U is for a string field, not int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := generate(writePkg(t, tc.src), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q; output:\n%s", err, tc.want, out)
			}
		})
	}
}
