package registry_test

import (
	"slices"
	"testing"

	"github.com/toolsd/toolsd/builtin"
	"github.com/toolsd/toolsd/registry"
)

// TestBuiltinsAreFlat: the built-ins an agent calls most have schemas of the flat form, so
// their arguments are checked without the schema library's decode; a change to one of their
// schemas that loses it shows here.
func TestBuiltinsAreFlat(t *testing.T) {
	want := []string{"read", "bash", "write", "edit", "apply_patch", "glob", "grep"}
	for _, tool := range builtin.Tools(&builtin.Options{}) {
		if flat := registry.HasFlatForm(tool.ID, tool.Parameters); slices.Contains(want, tool.ID) && !flat {
			t.Errorf("%s's schema has no flat form", tool.ID)
		}
	}
}
