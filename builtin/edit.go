package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/toolsd/toolsd/registry"
)

const editDescription = `Replaces text in a file: oldString becomes newString.

Usage:
- Read the file first. Copy oldString from read's output exactly as it is in the file, WITHOUT the line-number prefix (the number and the tab before each line).
- oldString must match one place in the file. If it matches several, the edit fails and says at which lines: add surrounding lines to make it unique, or set replaceAll to change every occurrence (renaming a variable, say).
- An exact match is tried first. If there is none, a match that differs only in indentation, in leading and trailing whitespace of lines, or in runs of whitespace is accepted, but only when it is unique; with an indentation-only difference newString is re-indented to fit.
- If oldString is not found, the error shows the closest lines of the file: read it again and retry.
- The file's line endings (LF or CRLF) and byte order mark are kept; write oldString and newString with plain newlines.
- An empty oldString creates the file with newString as its content (only for a file that does not exist or is empty).
- Keep the indentation of the code (tabs or spaces) in newString.`

func editTool(o *Options) *registry.Tool {
	s := schema{
		props: []prop{
			{"filePath", map[string]any{"type": "string", "minLength": 1, "description": "The path of the file to change: relative to the workspace root, or absolute."}},
			{"oldString", map[string]any{"type": "string", "description": "The text to replace, exactly as in the file (without read's line-number prefixes)."}},
			{"newString", map[string]any{"type": "string", "description": "The text to put in its place (must differ from oldString)."}},
			{"replaceAll", map[string]any{"type": "boolean", "description": "Replace every occurrence of oldString (default false: it must match exactly one place)."}},
		},
		required: []string{"filePath", "oldString", "newString"},
	}
	return &registry.Tool{
		ID:          "edit",
		Description: editDescription,
		Parameters:  s.raw(),
		Permission:  "edit",
		Changes:     registry.ChangesReported,
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			var a struct {
				FilePath   string `json:"filePath"`
				OldString  string `json:"oldString"`
				NewString  string `json:"newString"`
				ReplaceAll *bool  `json:"replaceAll"`
			}
			if err := decode(args, &a); err != nil {
				return nil, err
			}
			return runEdit(ctx, o, call, a.FilePath, a.OldString, a.NewString, deref(a.ReplaceAll))
		},
	}
}

func runEdit(ctx context.Context, o *Options, call *registry.Call, filePath, oldString, newString string, all bool) (*registry.Result, error) {
	if oldString == newString {
		return nil, errors.New("oldString and newString are the same: the edit would change nothing. Give the new text in newString")
	}
	t, data, info, err := openForChange(ctx, o, call, "filePath", filePath, oldString != "")
	if err != nil {
		return nil, err
	}

	var updated []byte
	var count int
	strategy := "exact"
	if oldString == "" {
		if len(data) > 0 {
			return nil, fmt.Errorf("oldString is empty but %s is not: give the text to replace, or use write to replace the whole file", t.Display())
		}
		updated, count, strategy = []byte(newString), 1, "create"
	} else {
		text, restore := normalizeText(data)
		oldN := strings.ReplaceAll(oldString, "\r\n", "\n")
		newN := strings.ReplaceAll(newString, "\r\n", "\n")
		res, n, strat, err := replaceText(text, oldN, newN, all)
		if err != nil {
			var me *matchError
			if errors.As(err, &me) {
				return nil, me.format(t.Display(), text, oldN)
			}
			return nil, err
		}
		if res == text {
			return nil, errors.New("the edit would change nothing (newString equals the text it replaces once matched): check newString")
		}
		updated, count, strategy = restore(res), n, strat
	}

	ch := &change{t: t, old: data, info: info, new: updated, existed: t.Exists()}
	if err := ch.ask(ctx, call); err != nil {
		return nil, err
	}
	if err := ch.report(ctx, call); err != nil {
		return nil, err
	}
	if err := ch.apply(); err != nil {
		return nil, err
	}
	meta := ch.metadata()
	meta["replacements"] = count
	meta["match"] = strategy
	out := fmt.Sprintf("Edited %s: %d replacement(s), +%d -%d lines.", t.Display(), count, ch.diff.Additions, ch.diff.Deletions)
	switch strategy {
	case "create":
		out = fmt.Sprintf("Created %s (%d lines).", t.Display(), countLines(newString))
	case "exact":
	default:
		out += fmt.Sprintf(" (oldString matched after %s; check the diff)", strategyWords[strategy])
	}
	return &registry.Result{Title: t.Display(), Output: out, Metadata: meta}, nil
}

var strategyWords = map[string]string{
	"indentation": "ignoring indentation",
	"trimmed":     "ignoring leading and trailing whitespace of lines",
	"whitespace":  "ignoring differences in whitespace",
}

var bom = []byte("\xEF\xBB\xBF")

// normalizeText returns data as text with a BOM dropped and CRLF line endings turned into
// LF (when every line ends in CRLF), and the function that puts them back.
func normalizeText(data []byte) (string, func(string) []byte) {
	hasBOM := bytes.HasPrefix(data, bom)
	if hasBOM {
		data = data[len(bom):]
	}
	s := string(data)
	crlf := strings.Contains(s, "\r\n") && strings.Count(s, "\r\n") == strings.Count(s, "\n")
	if crlf {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	return s, func(t string) []byte {
		if crlf {
			t = strings.ReplaceAll(t, "\n", "\r\n")
		}
		if hasBOM {
			return append(append([]byte{}, bom...), t...)
		}
		return []byte(t)
	}
}

// matchError says why oldString did not pick one place.
type matchError struct {
	lines    []int // 1-based lines of the matches, when several
	count    int
	strategy string
}

func (e *matchError) Error() string { return "no unique match" }

func (e *matchError) format(name, text, old string) error {
	if e.count > 1 {
		var ls []string
		for _, l := range e.lines[:min(len(e.lines), 20)] {
			ls = append(ls, fmt.Sprint(l))
		}
		more := ""
		if len(e.lines) > 20 {
			more = ", ..."
		}
		how := ""
		if e.strategy != "exact" {
			how = " (" + strategyWords[e.strategy] + ")"
		}
		return fmt.Errorf("oldString matches %d places in %s%s, at lines %s%s. Add surrounding lines to oldString so it matches one place, or set replaceAll to true to change them all", e.count, name, how, strings.Join(ls, ", "), more)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "oldString was not found in %s", name)
	if lineNumberPrefix.MatchString(old) {
		b.WriteString(". It seems to start with a line-number prefix from read's output (a number and a tab): leave those out")
	}
	if c := closestBlock(text, old, 0); c != "" {
		b.WriteString(". The closest text in the file:\n")
		b.WriteString(c)
		b.WriteString("\nCopy the text exactly from the file (read it again if it may have changed), without line-number prefixes.")
	} else {
		b.WriteString(", and nothing in it looks close. Read the file again and copy the text exactly.")
	}
	return errors.New(b.String())
}

var lineNumberPrefix = regexp.MustCompile(`^\s*\d+\t`)

// replaceText replaces old with new in text: exactly first, then tolerantly (one unique
// match, or all with replaceAll). It returns the text, how many places changed, and the
// strategy that matched.
func replaceText(text, old, new string, all bool) (string, int, string, error) {
	if n := strings.Count(text, old); n > 0 {
		if n > 1 && !all {
			return "", 0, "", &matchError{count: n, lines: exactLines(text, old), strategy: "exact"}
		}
		if all {
			return strings.ReplaceAll(text, old, new), n, "exact", nil
		}
		return strings.Replace(text, old, new, 1), 1, "exact", nil
	}
	lines := strings.Split(text, "\n")
	oldTrim := strings.TrimSuffix(old, "\n")
	newTrim := new
	if strings.HasSuffix(old, "\n") {
		newTrim = strings.TrimSuffix(new, "\n")
	}
	oldLines := strings.Split(oldTrim, "\n")
	for _, st := range []string{"indentation", "trimmed", "whitespace"} {
		starts := findWindows(lines, oldLines, st)
		if len(starts) == 0 {
			continue
		}
		if len(starts) > 1 && !all {
			ls := make([]int, len(starts))
			for i, s := range starts {
				ls[i] = s + 1
			}
			return "", 0, "", &matchError{count: len(starts), lines: ls, strategy: st}
		}
		// Replace from the last window back so earlier offsets stay valid.
		offsets := lineOffsets(lines)
		out := text
		for i := len(starts) - 1; i >= 0; i-- {
			s := starts[i]
			e := s + len(oldLines) - 1
			from := offsets[s]
			to := offsets[e] + len(lines[e])
			repl := newTrim
			if st == "indentation" {
				repl = reindent(newTrim, oldLines, lines[s:e+1])
			}
			out = out[:from] + repl + out[to:]
		}
		return out, len(starts), st, nil
	}
	return "", 0, "", &matchError{}
}

func exactLines(text, old string) []int {
	var ls []int
	line, pos := 1, 0
	for {
		i := strings.Index(text[pos:], old)
		if i < 0 {
			return ls
		}
		line += strings.Count(text[pos:pos+i], "\n")
		ls = append(ls, line)
		line += strings.Count(old, "\n")
		pos += i + len(old)
		if len(old) == 0 {
			return ls
		}
	}
}

func lineOffsets(lines []string) []int {
	off := make([]int, len(lines))
	o := 0
	for i, l := range lines {
		off[i] = o
		o += len(l) + 1
	}
	return off
}

// findWindows returns the first lines of the non-overlapping windows of lines that equal
// old under the strategy.
func findWindows(lines, old []string, strategy string) []int {
	if len(old) == 0 || len(old) > len(lines) {
		return nil
	}
	norm := func(s string) string { return s }
	switch strategy {
	case "trimmed":
		norm = strings.TrimSpace
	case "whitespace":
		norm = collapseSpace
	}
	oldN := make([]string, len(old))
	for i, l := range old {
		oldN[i] = norm(l)
	}
	var oldDedent []string
	if strategy == "indentation" {
		oldDedent = dedent(old)
	}
	// All-blank old text matches too much to be useful.
	if strings.TrimSpace(strings.Join(old, "")) == "" {
		return nil
	}
	first := strings.TrimSpace(old[0])
	var starts []int
	for s := 0; s+len(old) <= len(lines); s++ {
		// Quick reject on the first line.
		if strategy != "whitespace" && strings.TrimSpace(lines[s]) != first {
			continue
		}
		ok := true
		if strategy == "indentation" {
			win := dedent(lines[s : s+len(old)])
			for i := range win {
				if win[i] != oldDedent[i] {
					ok = false
					break
				}
			}
		} else {
			for i := range old {
				if norm(lines[s+i]) != oldN[i] {
					ok = false
					break
				}
			}
		}
		if ok {
			starts = append(starts, s)
			s += len(old) - 1
		}
	}
	return starts
}

func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// commonIndent returns the leading whitespace common to the non-blank lines.
func commonIndent(lines []string) string {
	prefix := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := l[:len(l)-len(strings.TrimLeftFunc(l, unicode.IsSpace))]
		if first {
			prefix, first = ind, false
			continue
		}
		for !strings.HasPrefix(ind, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	return prefix
}

// dedent removes the common indentation of lines (blank lines become empty) and trailing
// whitespace.
func dedent(lines []string) []string {
	p := commonIndent(lines)
	out := make([]string, len(lines))
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		out[i] = strings.TrimRightFunc(strings.TrimPrefix(l, p), unicode.IsSpace)
	}
	return out
}

// reindent moves newText from oldLines' indentation to the file window's.
func reindent(newText string, oldLines, window []string) string {
	from, to := commonIndent(oldLines), commonIndent(window)
	if from == to {
		return newText
	}
	ls := strings.Split(newText, "\n")
	for i, l := range ls {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if strings.HasPrefix(l, from) {
			ls[i] = to + l[len(from):]
		}
	}
	return strings.Join(ls, "\n")
}

// closestBlock shows the lines of text most like old, with line numbers.
func closestBlock(text, old string, lineOffset int) string {
	oldLines := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	// The most distinctive line of old: the longest after trimming.
	key := ""
	keyIdx := 0
	for i, l := range oldLines {
		if t := strings.TrimSpace(l); len(t) > len(key) {
			key, keyIdx = t, i
		}
	}
	if key == "" {
		return ""
	}
	keyWords := wordSet(key)
	lines := strings.Split(text, "\n")
	type cand struct {
		line  int
		score float64
	}
	var cs []cand
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if s := similarity(keyWords, key, t); s >= 0.5 {
			cs = append(cs, cand{i, s})
		}
	}
	if len(cs) == 0 {
		return ""
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].score > cs[j].score })
	best := cs[0].line - keyIdx
	start := max(0, best)
	end := min(len(lines), start+max(len(oldLines), 1))
	end = min(end, start+15)
	var b strings.Builder
	for i := start; i < end; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1+lineOffset, lines[i])
	}
	if len(cs) > 1 {
		var others []string
		for _, c := range cs[1:min(len(cs), 4)] {
			others = append(others, fmt.Sprint(c.line+1+lineOffset))
		}
		fmt.Fprintf(&b, "(similar lines also at: %s)\n", strings.Join(others, ", "))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		m[w] = true
	}
	return m
}

// similarity of the trimmed line t to the key line: word overlap, refined by edit
// distance for short lines.
func similarity(keyWords map[string]bool, key, t string) float64 {
	if t == key {
		return 1
	}
	if len(t) > 3*len(key)+10 || len(key) > 3*len(t)+10 {
		return 0
	}
	tw := wordSet(t)
	inter := 0
	for w := range tw {
		if keyWords[w] {
			inter++
		}
	}
	union := len(tw) + len(keyWords) - inter
	score := 0.0
	if union > 0 {
		score = float64(inter) / float64(union)
	}
	if (inter > 0 || len(key) < 12) && len(key) <= 200 && len(t) <= 200 {
		d := registry.EditDistance(key, t)
		score = max(score, 1-float64(d)/float64(max(len(key), len(t))))
	}
	return score
}
