package archtest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the floors block of docs/architecture.md from the imports")

const (
	archDoc     = "../../docs/architecture.md"
	floorsBegin = "<!-- floors: written by `go test ./internal/archtest -run Floors -update`; do not edit -->\n"
	floorsEnd   = "<!-- /floors -->\n"
)

// floors computes the floor of each package the toolsd binary is built from: 0 for one that
// imports no package of this module, else one above the highest floor it imports.
func floors(t *testing.T) map[string]int {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"cmd/toolsd").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if !strings.HasPrefix(f[0], module) {
			continue
		}
		pkg := strings.TrimPrefix(f[0], module)
		imports[pkg] = []string{}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				imports[pkg] = append(imports[pkg], strings.TrimPrefix(imp, module))
			}
		}
	}
	floor := map[string]int{}
	var visit func(pkg string, path []string) int
	visit = func(pkg string, path []string) int {
		if f, ok := floor[pkg]; ok {
			return f
		}
		for _, p := range path {
			if p == pkg {
				t.Fatalf("import cycle: %s", strings.Join(append(path, pkg), " → "))
			}
		}
		f := 0
		for _, imp := range imports[pkg] {
			f = max(f, visit(imp, append(path, pkg))+1)
		}
		floor[pkg] = f
		return f
	}
	for pkg := range imports {
		visit(pkg, nil)
	}
	return floor
}

// floorsBlock writes the floors from the top down, the packages of a floor by name.
func floorsBlock(floor map[string]int) string {
	byFloor := map[int][]string{}
	top := 0
	for pkg, f := range floor {
		byFloor[f] = append(byFloor[f], pkg)
		top = max(top, f)
	}
	var b strings.Builder
	b.WriteString(floorsBegin + "```\n")
	for f := top; f >= 0; f-- {
		pkgs := byFloor[f]
		sort.Strings(pkgs)
		line := fmt.Sprintf("%2d ", f)
		for _, p := range pkgs {
			if len(line)+1+len(p) > 100 {
				b.WriteString(line + "\n")
				line = "   "
			}
			line += " " + p
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("```\n" + floorsEnd)
	return b.String()
}

// The floors drawn in docs/architecture.md are the imports' floors.
func TestFloors(t *testing.T) {
	doc, err := os.ReadFile(archDoc)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(doc, []byte(floorsBegin))
	j := bytes.Index(doc, []byte(floorsEnd))
	if i < 0 || j < i {
		t.Fatalf("docs/architecture.md has no floors block: put the lines\n%s%sin it, then run `go test ./internal/archtest -run Floors -update`", floorsBegin, floorsEnd)
	}
	j += len(floorsEnd)
	want := floorsBlock(floors(t))
	if string(doc[i:j]) == want {
		return
	}
	if *update {
		out := append(append(append([]byte{}, doc[:i]...), want...), doc[j:]...)
		if err := os.WriteFile(archDoc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the floors block of docs/architecture.md")
		return
	}
	t.Errorf("docs/architecture.md's floors are not the imports' floors: run `go test ./internal/archtest -run Floors -update`.\nchecked in:\n%s\nfrom the imports:\n%s", doc[i:j], want)
}
