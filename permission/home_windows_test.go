package permission

import (
	"encoding/json"
	"testing"
)

// On Windows the home folder is C:\Users\…, and path subjects are written with forward
// slashes: a rule on ~ must be too, or a deny on ~/.ssh never matches.
func TestHomeInRulesOnWindows(t *testing.T) {
	t.Setenv("USERPROFILE", `C:\Users\ann`)
	got, err := ParseConfig(json.RawMessage(`{"read": {"~/.ssh/*": "deny", "$HOME/x": "ask", "~": "ask"}}`), "user")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"C:/Users/ann/.ssh/*", "C:/Users/ann/x", "C:/Users/ann"}
	for i, r := range got {
		if r.Pattern != want[i] {
			t.Errorf("rule %d: pattern %q, want %q", i, r.Pattern, want[i])
		}
	}
}
