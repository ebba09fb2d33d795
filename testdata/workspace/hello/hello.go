// Package hello greets people.
package hello

import "fmt"

// Greet returns a greeting for name; an empty name greets the world.
func Greet(name string) string {
	if name == "" {
		name = "world"
	}
	return fmt.Sprintf("Hello, %s!", name)
}
