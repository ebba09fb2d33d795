// The layering of docs/architecture.md, checked: a package may import only the packages of
// this module that the table allows (and, transitively, what they import).
package archtest

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/toolsd/toolsd/"

// allowed reads the layer table of docs/architecture.md: for each package of the module
// with a row, the module packages it may import directly. "everything above" allows the
// packages of the rows above it; "—" none. Packages without a row (bench drivers, test
// helpers) may import anything below rpc.
func allowed(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile(archDoc)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string][]string{}
	var above []string
	for _, line := range strings.Split(string(doc), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 5 || !strings.HasPrefix(strings.TrimSpace(f[1]), "`") {
			continue
		}
		pkg := strings.Trim(strings.TrimSpace(f[1]), "`")
		var deps []string
		switch may := strings.TrimSpace(f[3]); may {
		case "—":
		case "everything above":
			deps = slices.Clone(above)
		default:
			for _, d := range strings.Split(may, ",") {
				deps = append(deps, strings.TrimSpace(d))
			}
		}
		allowed[pkg] = deps
		above = append(above, pkg)
	}
	if len(allowed) == 0 {
		t.Fatalf("%s has no layer table (rows | `package` | what it is | may import |)", archDoc)
	}
	return allowed
}

func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := allowed(t)
	exists := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		exists[pkg] = true
		ok, listed := allowed[pkg]
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			if !listed {
				if dep == "rpc" || strings.HasPrefix(dep, "cmd/") {
					t.Errorf("%s imports %s: only cmd/toolsd wires the top layer", pkg, dep)
				}
				continue
			}
			if !slices.Contains(ok, dep) {
				t.Errorf("%s imports %s, which docs/architecture.md does not allow (a lower layer never imports a higher one)", pkg, dep)
			}
		}
	}
	for pkg, deps := range allowed {
		for _, p := range append([]string{pkg}, deps...) {
			if !exists[p] {
				t.Errorf("docs/architecture.md's layer table names %s, which is not a package of the module", p)
			}
		}
	}
}

// keptOut are modules the daemon's binary must not link, and why: every start of the binary
// (the daemon, each `toolsd mcp`, and each tool's guard and sandbox stage where toolsd-guard
// is not installed) runs the package init of all it links.
var keptOut = map[string]string{
	"google.golang.org/grpc":   "the audit trail's OTLP exporter is toolsd's own (audit/otlp.go): gRPC's runtime would add its init and megabytes of binary to every start, for a feature that is usually off",
	"go.opentelemetry.io/otel": "the audit trail makes and batches its spans itself (audit/audit.go): the SDK's init and its dependencies would cost every start",
}

func TestBinaryKeepsOut(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"cmd/toolsd").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	linked := map[string][]string{}
	for _, pkg := range strings.Fields(string(out)) {
		for mod := range keptOut {
			if pkg == mod || strings.HasPrefix(pkg, mod+"/") {
				linked[mod] = append(linked[mod], pkg)
			}
		}
	}
	for mod, pkgs := range linked {
		t.Errorf("cmd/toolsd links %d packages of %s (%s, …): %s", len(pkgs), mod, pkgs[0], keptOut[mod])
	}
}

// leanOut are modules the guard's binary (cmd/toolsd-guard) must not link: it starts twice
// for every tool process, and exists to start without the daemon's packages.
var leanOut = []string{"github.com/santhosh-tekuri/jsonschema", "github.com/modelcontextprotocol/go-sdk", "go.etcd.io/bbolt", "mvdan.cc/sh",
	"google.golang.org/protobuf", "go.opentelemetry.io/proto/otlp"}

func TestGuardBinaryIsLean(t *testing.T) {
	if linked := linkedOf(t, "cmd/toolsd-guard", leanOut); len(linked) > 0 {
		t.Errorf("cmd/toolsd-guard links %s: the guard and the stage would pay the daemon's start", strings.Join(linked, ", "))
	}
	if linked := linkedOf(t, "cmd/toolsd", leanOut); len(linked) != len(leanOut) {
		t.Errorf("cmd/toolsd links only %v of %v: this test no longer tells a lean binary from the daemon's", linked, leanOut)
	}
}

// linkedOf returns the modules of mods that the package pkg of this module links.
func linkedOf(t *testing.T, pkg string, mods []string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", module+pkg).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var linked []string
	for _, mod := range mods {
		for _, p := range strings.Fields(string(out)) {
			if p == mod || strings.HasPrefix(p, mod+"/") {
				linked = append(linked, mod)
				break
			}
		}
	}
	return linked
}
