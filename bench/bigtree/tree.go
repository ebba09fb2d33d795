// Package bigtree builds a large workspace reproducibly and measures checkpoints on it
// (issue 26): the same files, names and bytes on every machine, from a fixed seed.
package bigtree

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Shape of the generated tree: Tops folders of Mids folders of Leaves folders, each leaf
// holding PerLeaf files (the default: 6,510 folders and 100,000 files, about 200 MB, the
// shape of a kernel source tree: some 16 files per folder).
type Shape struct {
	Tops, Mids, Leaves, PerLeaf int
}

// Default is 10 × 25 × 25 leaf folders of 16 files: 100,000 files.
var Default = Shape{Tops: 10, Mids: 25, Leaves: 25, PerLeaf: 16}

// Files is how many files the shape makes.
func (s Shape) Files() int { return s.Tops * s.Mids * s.Leaves * s.PerLeaf }

// Make writes the tree into dir (which must not exist, or be empty) and makes it a git
// repository with one commit, as a real project is. The contents are lines of text (so that
// sed has something to change), 100 to 4,000 bytes per file, drawn from a fixed seed.
func Make(dir string, s Shape) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(26, 2026))
	words := []string{"static", "int", "struct", "return", "if", "else", "for", "void", "const", "unsigned", "long", "char", "sizeof", "goto", "out", "err", "lock", "unlock", "dev", "buf"}
	var line strings.Builder
	for t := range s.Tops {
		for m := range s.Mids {
			for l := range s.Leaves {
				leaf := filepath.Join(dir, fmt.Sprintf("top%02d", t), fmt.Sprintf("mid%02d", m), fmt.Sprintf("leaf%02d", l))
				if err := os.MkdirAll(leaf, 0o755); err != nil {
					return err
				}
				for f := range s.PerLeaf {
					size := 100 + rng.IntN(3900)
					var b strings.Builder
					for b.Len() < size {
						line.Reset()
						for range 3 + rng.IntN(8) {
							line.WriteString(words[rng.IntN(len(words))])
							line.WriteByte(' ')
						}
						b.WriteString(strings.TrimSpace(line.String()))
						b.WriteString(";\n")
					}
					name := filepath.Join(leaf, fmt.Sprintf("file%02d.c", f))
					if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
						return err
					}
				}
			}
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "tree"}} {
		c := exec.Command("git", append([]string{"-C", dir}, args...)...)
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v %s", args, err, out)
		}
	}
	return nil
}
