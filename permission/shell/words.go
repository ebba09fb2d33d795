package shell

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// word is one shell word as the analysis sees it.
type word struct {
	// text is the word after quote removal; expansions ($x, $(...), $((...)), <(...)) are
	// kept as written.
	text string
	// raw is the word as written in the source.
	raw string
	// static reports that the word has no expansion: its value is text, whatever runs.
	static bool
	// glob reports unquoted pattern characters (* ? [ or a brace expansion, an extglob):
	// the shell may turn the word into other words.
	glob bool
	// prefix is the literal start of text, before any expansion or pattern character:
	// what the word is sure to begin with ("--file=" in --file=$f). For a static word
	// without pattern characters it is text.
	prefix string
}

// render turns w into a word; src is the source the word's positions refer to.
func render(src string, w *syntax.Word) word {
	var b strings.Builder
	out := word{raw: slice(src, w.Pos(), w.End()), static: true}
	prefixEnd := -1 // where the literal start of the text ends, once known
	stop := func() {
		if prefixEnd < 0 {
			prefixEnd = b.Len()
		}
	}
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			s, glob := unescapeUnquoted(p.Value)
			if glob && prefixEnd < 0 {
				prefixEnd = b.Len() + globStart(p.Value)
			}
			b.WriteString(s)
			out.glob = out.glob || glob
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(decodeANSIC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeDouble(l.Value))
					continue
				}
				stop()
				out.static = false
				b.WriteString(slice(src, q.Pos(), q.End()))
			}
		case *syntax.ExtGlob:
			stop()
			out.glob = true
			b.WriteString(slice(src, p.Pos(), p.End()))
		default: // ParamExp, CmdSubst, ArithmExp, ProcSubst, BraceExp
			stop()
			out.static = false
			b.WriteString(slice(src, p.Pos(), p.End()))
		}
	}
	out.text = b.String()
	out.prefix = out.text
	if prefixEnd >= 0 && prefixEnd <= len(out.text) {
		out.prefix = out.text[:prefixEnd]
	}
	return out
}

// slice returns src between two positions, or "" when they do not fit (which the parser
// never produces, but the analysis must not panic on).
func slice(src string, from, to syntax.Pos) string {
	if !from.IsValid() || !to.IsValid() {
		return ""
	}
	i, j := int(from.Offset()), int(to.Offset())
	if i < 0 || j > len(src) || i > j {
		return ""
	}
	return src[i:j]
}

// unescapeUnquoted removes backslash escapes and line continuations of an unquoted literal
// and reports whether an unescaped pattern character remains (* ? [, or a brace expansion).
func unescapeUnquoted(s string) (string, bool) {
	if !strings.ContainsAny(s, "\\*?[{") {
		return s, false
	}
	var b strings.Builder
	glob := false
	brace := -1 // index in b of an unescaped '{'
	comma := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
			b.WriteByte(s[i])
			continue
		}
		switch c {
		case '*', '?', '[':
			glob = true
		case '{':
			brace = b.Len()
			comma = false
		case ',':
			if brace >= 0 {
				comma = true
			}
		case '.':
			if brace >= 0 && i+1 < len(s) && s[i+1] == '.' {
				comma = true
			}
		case '}':
			if brace >= 0 && comma {
				glob = true
			}
			brace = -1
		}
		b.WriteByte(c)
	}
	return b.String(), glob
}

// globStart returns how many bytes of the unescaped form of an unquoted literal come
// before its first unescaped pattern character (a conservative count: escapes before it
// make the prefix shorter, never longer).
func globStart(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			n++
			continue
		}
		if strings.IndexByte("*?[{", c) >= 0 {
			return n
		}
		n++
	}
	return n
}

// unescapeDouble removes the escapes that double quotes honour: \$ \` \" \\ and \newline.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				b.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// decodeANSIC decodes the body of a $'...' string as bash does.
func decodeANSIC(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			} else {
				b.WriteString(`\c`)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := i + 1
			for j < len(s) && j-i-1 < max && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if e == 'x' {
				b.WriteByte(byte(n))
			} else if utf8.ValidRune(rune(n)) {
				b.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(n))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func texts(ws []word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.text
	}
	return out
}

func join(ws []word) string { return strings.Join(texts(ws), " ") }
