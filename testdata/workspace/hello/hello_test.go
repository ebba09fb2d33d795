package hello

import "testing"

func TestGreet(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"", "Hello, world!"},
		{"Ada", "Hello, Ada!"},
	} {
		if got := Greet(tc.name); got != tc.want {
			t.Errorf("Greet(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
