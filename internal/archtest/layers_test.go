// The layering of docs/architecture.md, checked: a package may import only the packages of
// this module that the table allows (and, transitively, what they import).
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/toolsd/toolsd/"

// allowed lists, for each package of the module, the module packages it may import directly.
// Packages not listed (bench drivers, tests) may import anything below rpc.
var allowed = map[string][]string{
	"protocol":           {},
	"internal/proc":      {"internal/sandbox"},
	"internal/sandbox":   {"internal/fspath", "internal/protect"},
	"internal/cli":       {},
	"internal/fspath":    {},
	"internal/protect":   {},
	"internal/fsopen":    {},
	"internal/fswalk":    {"internal/fspath"},
	"internal/textdiff":  {},
	"internal/jsonpos":   {},
	"internal/jsondec":   {},
	"store":              {"protocol", "internal/fsopen"},
	"permission/shell":   {},
	"permission":         {"protocol", "permission/shell", "internal/fspath", "internal/fsopen", "internal/jsonpos", "internal/protect"},
	"registry":           {"protocol"},
	"watcher":            {},
	"config":             {"protocol", "watcher", "internal/jsonpos", "internal/fsopen", "internal/sandbox", "permission"},
	"builtin":            {"protocol", "registry", "permission", "permission/shell", "internal/proc", "internal/fspath", "internal/fswalk", "internal/textdiff", "internal/sandbox", "internal/jsondec", "internal/protect"},
	"project":            {"protocol", "registry", "watcher", "internal/proc", "internal/jsonpos", "internal/fsopen", "internal/sandbox"},
	"policy":             {"protocol", "config", "permission", "builtin", "registry", "store", "internal/jsonpos"},
	"audit":              {"protocol"},
	"checkpoint":         {"protocol", "store", "internal/fspath", "internal/fswalk", "internal/textdiff", "internal/fsopen", "internal/protect", "watcher"},
	"hook":               {"protocol", "permission", "registry", "internal/proc", "internal/sandbox", "internal/protect"},
	"session":            {"protocol", "registry", "store", "permission", "config", "builtin", "project", "mcp", "watcher", "internal/proc", "policy", "audit", "checkpoint", "internal/sandbox", "hook", "internal/protect", "internal/textdiff"},
	"mcp":                {"protocol", "registry", "internal/proc", "internal/sandbox"},
	"mcpserver":          {"protocol", "session", "registry", "store"},
	"rpc":                {"protocol", "session", "internal/jsondec"},
	"attach":             {"protocol", "rpc", "mcpserver", "session", "store"},
	"cmd/toolsd":         {"protocol", "rpc", "session", "store", "internal/proc", "mcpserver", "internal/cli", "policy", "internal/sandbox", "attach", "agenthook", "internal/textdiff", "acp"},
	"cmd/toolsd-guard":   {"internal/proc"},
	"internal/harness":   {"protocol"},
	"internal/demo":      {"protocol"},
	"cmd/toolsd-demo":    {"internal/demo"},
	"internal/archtest":  {},
	"internal/protogen":  {},
	"agenthook":          {"protocol"},
	"internal/fakemodel": {},
	"acp":                {"protocol", "agenthook"},
}

func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
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
			if !contains(ok, dep) {
				t.Errorf("%s imports %s, which docs/architecture.md does not allow (a lower layer never imports a higher one)", pkg, dep)
			}
		}
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// keptOut are modules the daemon's binary must not link, and why: every start of the binary
// (the daemon, each `toolsd mcp`, and each tool's guard and sandbox stage where toolsd-guard
// is not installed) runs the package init of all it links.
var keptOut = map[string]string{
	"google.golang.org/grpc":     "the audit trail's OTLP exporter is toolsd's own (audit/otlp.go): gRPC's init and 10 MB of binary cost every start about 0.8 ms",
	"google.golang.org/protobuf": "the audit trail writes OTLP's protobuf by hand (audit/otlpproto.go), for the same reason",
	"go.opentelemetry.io/otel":   "the audit trail makes and batches its spans itself (audit/audit.go): the SDK's init and its dependencies cost every start about 0.5 ms",
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
var leanOut = []string{"github.com/santhosh-tekuri/jsonschema", "github.com/modelcontextprotocol/go-sdk", "go.etcd.io/bbolt", "mvdan.cc/sh"}

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
