package sandbox

import (
	"strings"
	"testing"
)

// Where AppArmor keeps user namespaces from toolsd, the check says so and gives the profile
// that allows them for the toolsd binary alone, its path quoted when the profile language
// would read it otherwise.
func TestAppArmorFix(t *testing.T) {
	s := Support{LandlockABI: 7, Seccomp: true, NamespacesWhy: "operation not permitted", AppArmorUserns: true}
	if d := strings.Join(s.Describe(), "\n"); !strings.Contains(d, "apparmor_restrict_unprivileged_userns = 1") {
		t.Fatalf("the check does not name AppArmor's restriction:\n%s", d)
	}
	s.Namespaces = true
	if d := strings.Join(s.Describe(), "\n"); strings.Contains(d, "AppArmor") {
		t.Fatalf("AppArmor named though the namespaces work:\n%s", d)
	}
	if fix := AppArmorFix("/usr/local/bin/toolsd", "/usr/local/bin/toolsd-guard"); !strings.Contains(fix, "profile toolsd /usr/local/bin/toolsd flags=(unconfined) {\n") ||
		!strings.Contains(fix, "profile toolsd-guard /usr/local/bin/toolsd-guard flags=(unconfined) {\n") || !strings.Contains(fix, "include if exists <local/toolsd-guard>\n") {
		t.Errorf("no profile for each of the daemon and its guard in\n%s", fix)
	}
	for exe, want := range map[string]string{
		"/usr/local/bin/toolsd":            "profile toolsd /usr/local/bin/toolsd flags=(unconfined) {",
		"/home/a b/.vscode/ext/bin/toolsd": `profile toolsd "/home/a b/.vscode/ext/bin/toolsd" flags=(unconfined) {`,
		"/opt/tools,d/toolsd":              `profile toolsd "/opt/tools,d/toolsd" flags=(unconfined) {`,
	} {
		fix := AppArmorFix(exe)
		for _, line := range []string{want, "  userns,", "abi <abi/4.0>,", "sudo apparmor_parser -r /etc/apparmor.d/toolsd"} {
			if !strings.Contains(fix, line+"\n") {
				t.Errorf("%s: no line %q in\n%s", exe, line, fix)
			}
		}
	}
}
