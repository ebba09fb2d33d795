package shell

import "strings"

// sedUnsafe says why a sed script is not one toolsd knows to be safe ("" when it is). The
// script is read as GNU sed reads it; it is safe when every command is one that only edits
// the text going through: it must not run commands (e, s///e), write files (w, W, s///w) or
// read files (r, R), and it must be made only of commands this reader knows.
func sedUnsafe(script string) string {
	p := &sedReader{s: script}
	return p.run()
}

type sedReader struct {
	s string
	i int
}

func (p *sedReader) eof() bool { return p.i >= len(p.s) }
func (p *sedReader) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}

func (p *sedReader) skipSpace() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sedReader) run() string {
	depth := 0
	for {
		for !p.eof() && strings.IndexByte(" \t\n;", p.s[p.i]) >= 0 {
			p.i++
		}
		if p.eof() {
			if depth != 0 {
				return "an unclosed { block"
			}
			return ""
		}
		if p.peek() == '#' {
			for !p.eof() && p.s[p.i] != '\n' {
				p.i++
			}
			continue
		}
		if p.peek() == '}' {
			if depth == 0 {
				return "an unexpected }"
			}
			depth--
			p.i++
			continue
		}
		if why := p.addresses(); why != "" {
			return why
		}
		p.skipSpace()
		for p.peek() == '!' {
			p.i++
			p.skipSpace()
		}
		if p.eof() {
			return "an address without a command"
		}
		c := p.s[p.i]
		p.i++
		switch c {
		case '{':
			depth++
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'q', 'Q', 'L':
			p.skipSpace()
			for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
				p.i++
			}
		case ':', 'b', 't', 'T':
			p.skipSpace()
			for !p.eof() && p.s[p.i] != '\n' && p.s[p.i] != ';' && (c == ':' || p.s[p.i] != '}') {
				p.i++
			}
		case 'a', 'i', 'c':
			p.text()
		case 's':
			if why := p.subst(); why != "" {
				return why
			}
		case 'y':
			delim, ok := p.delim()
			if !ok {
				return "a y command without its delimiter"
			}
			for k := 0; k < 2; k++ {
				if !p.until(delim) {
					return "an unterminated y command"
				}
			}
		case 'e':
			return "its e command runs a shell command"
		case 'w', 'W':
			return "its " + string(c) + " command writes a file"
		case 'r', 'R':
			return "its " + string(c) + " command reads a file named in the script"
		case 'v':
			for !p.eof() && p.s[p.i] != '\n' && p.s[p.i] != ';' {
				p.i++
			}
		default:
			return "its " + string(c) + " command is not one toolsd knows"
		}
	}
}

// addresses reads the optional addresses before a command.
func (p *sedReader) addresses() string {
	for k := 0; k < 2; k++ {
		if k == 1 {
			if p.peek() != ',' {
				return ""
			}
			p.i++
			p.skipSpace()
			if p.peek() == '+' || p.peek() == '~' {
				p.i++
			}
		}
		switch c := p.peek(); {
		case c >= '0' && c <= '9':
			for !p.eof() && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '~') {
				p.i++
			}
		case c == '$':
			p.i++
		case c == '/' || c == '\\':
			if c == '\\' {
				p.i++
			}
			delim, ok := p.delim()
			if !ok {
				return "an address without its delimiter"
			}
			if c == '/' {
				delim = '/'
			}
			if !p.until(delim) {
				return "an unterminated address"
			}
			for p.peek() == 'I' || p.peek() == 'M' {
				p.i++
			}
		default:
			if k == 1 {
				return "a range without its end"
			}
			return ""
		}
		p.skipSpace()
	}
	return ""
}

// delim reads the delimiter of s, y or \cREc: any character but a backslash or newline.
func (p *sedReader) delim() (byte, bool) {
	if p.eof() || p.s[p.i] == '\\' || p.s[p.i] == '\n' {
		return 0, false
	}
	d := p.s[p.i]
	p.i++
	return d, true
}

// until moves past the next unescaped delim; false when there is none.
func (p *sedReader) until(delim byte) bool {
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		if c == '\\' {
			p.i++
			continue
		}
		if c == delim {
			return true
		}
	}
	return false
}

func (p *sedReader) subst() string {
	delim, ok := p.delim()
	if !ok {
		return "an s command without its delimiter"
	}
	for k := 0; k < 2; k++ {
		if !p.until(delim) {
			return "an unterminated s command"
		}
	}
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case c == 'g' || c == 'p' || c == 'i' || c == 'I' || c == 'm' || c == 'M' || c >= '0' && c <= '9':
			p.i++
		case c == 'e':
			return "its s///e runs the result as a shell command"
		case c == 'w':
			return "its s///w writes a file"
		default:
			return ""
		}
	}
	return ""
}

// text skips the text of a, i or c: the rest of the line, continued by a backslash.
func (p *sedReader) text() {
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		if c == '\\' && !p.eof() {
			p.i++
			continue
		}
		if c == '\n' {
			return
		}
	}
}

// awkUnsafe says why an awk program is not one toolsd knows to be safe ("" when it is).
// awk is a programming language; what is accepted is read conservatively: no system(), no
// getline (which reads files and runs commands), no pipes and no output redirection (a >
// other than >= after a print), no gawk extensions loaded with @, and no ARGV or ARGC
// (setting them names the files awk reads).
func awkUnsafe(prog string) string {
	for _, w := range []string{"system", "getline", "@"} {
		if strings.Contains(prog, w) {
			return "it uses " + w + ", which can run commands or read files"
		}
	}
	for _, w := range []string{"ARGV", "ARGC"} {
		if strings.Contains(prog, w) {
			return "it uses " + w + ", which can change the files awk reads"
		}
	}
	for i := 0; i < len(prog); i++ {
		switch prog[i] {
		case '|':
			if i+1 < len(prog) && prog[i+1] == '|' {
				i++
				continue
			}
			return "it uses a pipe, which runs a command"
		case '>':
			if i+1 < len(prog) && prog[i+1] == '=' {
				i++
				continue
			}
			// Output redirection belongs to a print or printf statement, whose keyword
			// comes before it: a > with no print before it compares (NR > 1 {print}).
			if strings.Contains(prog[:i], "print") {
				return "it uses > after print, which may write a file (use >= or swap the operands of a comparison)"
			}
		}
	}
	return ""
}
