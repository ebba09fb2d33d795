package attach

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FirstFrame reads the first LSP frame a stdio client sends and returns its bytes (header
// included, to be passed on unchanged) and, when it is an initialize naming an existing
// absolute workspaceFolder, that folder. Anything else (another method, a malformed header,
// a body over limit, the end of input) gives folder "": the caller serves the client itself
// from raw and the rest of r, and answers it as a daemon would. Only the first frame is read.
func FirstFrame(r *bufio.Reader, limit int) (raw []byte, folder string) {
	length := -1
	for {
		line, err := r.ReadSlice('\n')
		raw = append(raw, line...)
		if err != nil || len(raw) > maxLine {
			return raw, ""
		}
		t := strings.TrimRight(string(line), "\r\n")
		if t == "" {
			if length < 0 {
				if len(raw) <= 2 {
					continue // a stray blank line before the header
				}
				return raw, ""
			}
			break
		}
		name, value, ok := strings.Cut(t, ":")
		if !ok {
			return raw, ""
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n <= 0 || n > limit {
				return raw, ""
			}
			length = n
		}
	}
	body := make([]byte, length)
	n, _ := io.ReadFull(r, body)
	raw = append(raw, body[:n]...)
	if n < length {
		return raw, ""
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			WorkspaceFolder string `json:"workspaceFolder"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "initialize" {
		return raw, ""
	}
	f := msg.Params.WorkspaceFolder
	if !filepath.IsAbs(f) {
		return raw, ""
	}
	if fi, err := os.Stat(f); err != nil || !fi.IsDir() {
		return raw, ""
	}
	return raw, f
}
