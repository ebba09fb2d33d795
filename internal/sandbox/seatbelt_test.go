package sandbox

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden Seatbelt profiles in testdata")

// goldenPolicies are policies as Build makes them, with fixed paths.
func goldenPolicies() map[string]*Policy {
	base := func() *Policy {
		ws := "/Users/ada/src/app"
		return &Policy{
			Read:    []string{"/"},
			Write:   []string{ws, "/private/var/folders/xy/T", "/Users/ada/Library/Caches/toolsd/sandbox/app-0123456789abcdef"},
			Protect: []string{ws + "/.toolsd", ws + "/.vscode", ws + "/.envrc", ws + "/.git"},
			Deny:    []string{"/Users/ada/.ssh", "/Users/ada/.aws", "/Users/ada/.netrc", "/Users/ada/Library/Caches/toolsd/store"},
			Net:     Net{Mode: NetNone}, Workspace: ws, Temp: "/private/var/folders/xy/T", MaxProcs: DefaultMaxProcs,
		}
	}
	proxy := base()
	proxy.Net = Net{Mode: NetProxy, Proxy: "127.0.0.1:53124", Allow: []string{"proxy.golang.org"}}
	direct := base()
	direct.Net = Net{Mode: NetDirect}
	direct.UnixSockets = true
	quoted := base()
	quoted.Write = append(quoted.Write, `/Users/ada/odd "name" \ here`)
	// A workspace in a writable folder, and a writable home: git's folder above it and git's
	// user configuration are watched.
	above := base()
	above.Write = append(above.Write, "/Users/ada")
	above.Watch = []string{"/Users/ada/src/.git", "/Users/ada/.git", "/Users/ada/.gitconfig", "/Users/ada/.config/git"}
	return map[string]*Policy{"none": base(), "proxy": proxy, "direct-unix": direct, "quoted": quoted, "watch": above}
}

// TestSeatbeltGolden: the profile of each policy is the one in testdata/seatbelt (go test
// -run SeatbeltGolden -update rewrites them; read the diff).
func TestSeatbeltGolden(t *testing.T) {
	for name, p := range goldenPolicies() {
		t.Run(name, func(t *testing.T) {
			got, err := SeatbeltProfile(p)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "seatbelt", name+".sb")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run SeatbeltGolden -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("the profile of %s differs from %s:\n%s", name, path, got)
			}
		})
	}
}

// sbplForm is one top-level form of a profile: its action ("allow", "deny", "version"), its
// operations, and its filters as text ("(subpath \"/x\")").
type sbplForm struct {
	action  string
	ops     []string
	filters []string
}

// parseSBPL splits a profile into its top-level forms (comments dropped), enough to read
// what each rule allows or denies.
func parseSBPL(t *testing.T, text string) []sbplForm {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), ";") {
			lines = append(lines, l)
		}
	}
	var forms []sbplForm
	for _, form := range sexprs(t, strings.Join(lines, " ")) {
		head, rest, _ := strings.Cut(form[1:len(form)-1], "(")
		words := strings.Fields(head)
		f := sbplForm{action: words[0], ops: words[1:]}
		if rest != "" {
			f.filters = sexprs(t, "("+rest)
		}
		forms = append(forms, f)
	}
	return forms
}

// sexprs returns the parenthesized expressions of s at its top level, strings skipped.
func sexprs(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != '(' {
			continue
		}
		depth, j, inStr := 0, i, false
		for ; j < len(s); j++ {
			switch c := s[j]; {
			case inStr && c == '\\':
				j++
			case c == '"':
				inStr = !inStr
			case !inStr && c == '(':
				depth++
			case !inStr && c == ')':
				depth--
			}
			if depth == 0 {
				break
			}
		}
		if depth != 0 {
			t.Fatalf("unbalanced profile at %q", s[i:])
		}
		out = append(out, s[i:j+1])
		i = j
	}
	return out
}

// lastRule returns the index of the last form with action and an operation matching op
// (exactly, or a wildcard like "file-write*") that names filter; -1 when none does.
func lastRule(forms []sbplForm, action, op, filter string) int {
	at := -1
	for i, f := range forms {
		if f.action != action {
			continue
		}
		opOK := false
		for _, o := range f.ops {
			if o == op || strings.HasSuffix(o, "*") && strings.HasPrefix(op, strings.TrimSuffix(o, "*")) {
				opOK = true
			}
		}
		if opOK && (filter == "" || slices.Contains(f.filters, filter)) {
			at = i
		}
	}
	return at
}

// TestSeatbeltDeniesWhatLinuxDenies: the profile of the policy Build makes denies, by its
// text, everything docs/sandbox.md says the Linux sandbox denies: everything not allowed
// (deny default); writes outside the writable folders; writes to every protected path and
// reads and writes of every hidden one, each by a rule later than any allow (the later
// rule wins); devices but the usual ones; the network, but for the proxy's loopback port in
// proxy mode; Unix sockets; signals and process information outside the sandbox; any
// Mach service but user lookups and certificate trust (the keychain, among others).
func TestSeatbeltDeniesWhatLinuxDenies(t *testing.T) {
	root := real(t.TempDir())
	ws := filepath.Join(root, "ws")
	home := filepath.Join(root, "home")
	for _, d := range []string{filepath.Join(ws, ".git"), filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, net := range []Net{{Mode: NetNone}, {Mode: NetProxy, Proxy: "127.0.0.1:40001"}} {
		t.Run(net.Mode, func(t *testing.T) {
			// A writable folder above the workspace (and the home): git's folder there and
			// git's user configuration are watched.
			p := Build(Options{Workspace: ws, Home: home, TempDir: filepath.Join(root, "tmp"), CacheDir: filepath.Join(root, "cache"),
				Private: []string{filepath.Join(root, "store")}, Net: net, Write: []string{root}})
			if !slices.Contains(p.Watch, filepath.Join(root, ".git")) || !slices.Contains(p.Watch, filepath.Join(home, ".gitconfig")) {
				t.Fatalf("Build watches %v", p.Watch)
			}
			text, err := SeatbeltProfile(p)
			if err != nil {
				t.Fatal(err)
			}
			forms := parseSBPL(t, text)
			q := func(s string) string { x, _ := sbplString(s); return x }
			if lastRule(forms, "deny", "default", "") < 0 || lastRule(forms, "allow", "default", "") >= 0 {
				t.Errorf("the profile does not deny by default:\n%s", text)
			}
			// Writes: only the policy's writable folders and the usual devices.
			for _, f := range forms {
				if f.action != "allow" || !slices.ContainsFunc(f.ops, func(o string) bool { return strings.HasPrefix(o, "file-write") }) {
					continue
				}
				for _, flt := range f.filters {
					ok := slices.ContainsFunc(p.Write, func(w string) bool { return flt == "(subpath "+q(w)+")" }) ||
						slices.ContainsFunc(seatbeltDevices, func(d string) bool { return flt == "(subpath "+q(d)+")" }) ||
						strings.HasPrefix(flt, `(regex #"^/dev/ttys`)
					if !ok {
						t.Errorf("writes allowed to %s, which the policy does not make writable", flt)
					}
				}
			}
			lastAllow := func(op string) int { return lastRule(forms, "allow", op, "") }
			if len(p.Protect) == 0 || len(p.Deny) == 0 {
				t.Fatalf("Build made no protected or hidden paths: %+v", p)
			}
			for _, x := range append(slices.Clone(p.Protect), p.Watch...) {
				if i := lastRule(forms, "deny", "file-write-data", "(subpath "+q(x)+")"); i < 0 || i < lastAllow("file-write-data") {
					t.Errorf("writes to the protected (or watched) %s are not denied after every allow", x)
				}
			}
			for _, x := range p.Deny {
				for _, op := range []string{"file-read-data", "file-write-data"} {
					if i := lastRule(forms, "deny", op, "(subpath "+q(x)+")"); i < 0 || i < lastAllow(op) {
						t.Errorf("%s of the hidden %s is not denied after every allow", op, x)
					}
				}
			}
			if i := lastRule(forms, "deny", "file-read-data", `(subpath "/dev")`); i < 0 || i < lastRule(forms, "allow", "file-read-data", `(subpath "/")`) {
				t.Errorf("reading /dev is not denied after the read of everything")
			}
			for _, f := range forms {
				for _, o := range f.ops {
					switch {
					case f.action != "allow":
					case strings.HasPrefix(o, "network"):
						want := ""
						if net.Mode == NetProxy {
							want = `(remote ip "localhost:40001")`
						}
						if o != "network-outbound" || len(f.filters) != 1 || f.filters[0] != want {
							t.Errorf("network allowed: (allow %s %s)", o, strings.Join(f.filters, " "))
						}
					case o == "signal" || strings.HasPrefix(o, "process-info"):
						if len(f.filters) != 1 || f.filters[0] != "(target same-sandbox)" {
							t.Errorf("%s allowed beyond the sandbox: %v", o, f.filters)
						}
					case o == "mach-lookup":
						for _, flt := range f.filters {
							if flt != `(global-name "com.apple.system.opendirectoryd.libinfo")` && flt != `(global-name "com.apple.trustd.agent")` {
								t.Errorf("mach-lookup allowed for %s", flt)
							}
						}
					case o == "mach-priv-task-port" || o == "process-exec*" || o == "system-mount" || o == "file-mount":
						t.Errorf("%s allowed", o)
					}
				}
			}
		})
	}
}
