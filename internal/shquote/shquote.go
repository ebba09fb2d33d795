// Package shquote writes a string as one word of a POSIX shell command line.
package shquote

import "strings"

// Word returns s as one word of a POSIX shell line: a line that has it where a word goes
// passes exactly s, byte for byte, whatever s holds (quotes, newlines, `$`, `!`, a leading
// `~` or `=`, bytes that are not UTF-8). s is returned as it is when every byte of it is
// one that no shell reads as special anywhere in a word, else in single quotes (a single
// quote inside ends them, is escaped with a backslash and opens them again; the empty
// string is a pair of single quotes). A word starting with `-` stays one, and a command may
// still read it as an option: that is the command's grammar, not the shell's. s must not
// hold a NUL byte, which no word of a shell line can carry.
func Word(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !plain(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// plain reports whether r is special to no POSIX shell (nor bash or zsh) anywhere in a
// word: letters, digits, and / . _ - + , : @.
func plain(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return strings.ContainsRune("/._-+,:@", r)
}
