// Package jsonpos parses JSON into a tree that remembers where each key and value starts,
// so that a diagnostic can name the line and column of what is wrong.
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Kind is the JSON type of a node.
type Kind int

// Kinds.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// Node is one JSON value.
type Node struct {
	Kind   Kind
	Offset int    // byte offset of the value's first byte
	Raw    []byte // the value's bytes
	// Value holds the decoded scalar: nil, bool, json.Number or string.
	Value  any
	Fields []Field // for objects, in order (duplicates kept)
	Elems  []*Node // for arrays
}

// Field is one member of an object.
type Field struct {
	Name      string
	KeyOffset int
	Value     *Node
}

// Get returns the first field named name.
func (n *Node) Get(name string) (*Node, bool) {
	for _, f := range n.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// SyntaxError is bad JSON at a byte offset.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return e.Msg }

// Parse parses exactly one JSON value.
func Parse(data []byte) (*Node, error) {
	p := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		off := p.skip(int(p.dec.InputOffset()))
		return nil, &SyntaxError{Offset: off, Msg: "unexpected data after the end of the JSON value"}
	}
	return n, nil
}

type parser struct {
	data []byte
	dec  *json.Decoder
}

// skip returns the offset of the next token at or after off.
func (p *parser) skip(off int) int {
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

func (p *parser) token() (json.Token, int, error) {
	start := p.skip(int(p.dec.InputOffset()))
	tok, err := p.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, start, &SyntaxError{Offset: int(se.Offset), Msg: se.Error()}
		}
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, start, &SyntaxError{Offset: len(p.data), Msg: "unexpected end of JSON input"}
		}
		return nil, start, &SyntaxError{Offset: start, Msg: err.Error()}
	}
	return tok, start, nil
}

func (p *parser) value() (*Node, error) {
	tok, start, err := p.token()
	if err != nil {
		return nil, err
	}
	n := &Node{Offset: start}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.Kind = Object
			n.Fields = []Field{}
			for p.dec.More() {
				ktok, kstart, err := p.token()
				if err != nil {
					return nil, err
				}
				name, ok := ktok.(string)
				if !ok {
					return nil, &SyntaxError{Offset: kstart, Msg: "expected a quoted property name"}
				}
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				n.Fields = append(n.Fields, Field{Name: name, KeyOffset: kstart, Value: v})
			}
		case '[':
			n.Kind = Array
			n.Elems = []*Node{}
			for p.dec.More() {
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				n.Elems = append(n.Elems, v)
			}
		default:
			return nil, &SyntaxError{Offset: start, Msg: fmt.Sprintf("unexpected %q", rune(t))}
		}
		if _, _, err := p.token(); err != nil { // the closing delimiter
			return nil, err
		}
	case nil:
		n.Kind = Null
	case bool:
		n.Kind, n.Value = Bool, t
	case json.Number:
		n.Kind, n.Value = Number, t
	case string:
		n.Kind, n.Value = String, t
	}
	n.Raw = p.data[start:int(p.dec.InputOffset())]
	return n, nil
}

// Position converts a byte offset into a 1-based line and a 1-based column counted in
// bytes, as Go's compiler does.
func Position(data []byte, offset int) (line, col int) {
	offset = min(max(offset, 0), len(data))
	line = 1 + bytes.Count(data[:offset], []byte("\n"))
	col = offset - (bytes.LastIndexByte(data[:offset], '\n') + 1) + 1
	return line, col
}

// Lookup finds the node at a JSON pointer ("/properties/x/type") under n, and returns the
// deepest node it reached and whether it reached the end.
func (n *Node) Lookup(pointer string) (*Node, bool) {
	if pointer == "" || pointer == "/" {
		return n, true
	}
	cur := n
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		var next *Node
		switch cur.Kind {
		case Object:
			next, _ = cur.Get(tok)
		case Array:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(cur.Elems) {
				next = cur.Elems[i]
			}
		}
		if next == nil {
			return cur, false
		}
		cur = next
	}
	return cur, true
}
