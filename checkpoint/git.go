package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolsd/toolsd/internal/fsopen"
	"github.com/toolsd/toolsd/store"
)

// gitRepo is the git repository a workspace lies in. toolsd only reads it: its index (to
// know which files are exactly what git has, without reading them) and, with `git cat-file
// --batch`, the blobs of such files once a call changed them. It never runs a git command
// that could run something the repository configures (hooks, fsmonitor, filters).
type gitRepo struct {
	bin    string
	ws     string
	prefix string // the workspace's path in the repository, "" or ending in "/"
	index  string // the index file
	sha256 bool
	// trust is false when core.autocrlf converts line endings on checkout: then a file's
	// bytes differ from its blob.
	trust bool
	// Where attributes come from besides the work tree's .gitattributes files:
	// $GIT_DIR/info/attributes, core.attributesFile ("" when not set), a tree (attr.tree).
	infoAttrs, globalAttrs string
	attrTree               bool
}

const maxIndexBytes = 512 << 20

// gitEnv is the environment of the git commands toolsd runs: no prompts, no optional locks
// (nothing is written into the repository).
func gitEnv() []string {
	return append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_NO_LAZY_FETCH=1", "GIT_CONFIG_NOSYSTEM=1")
}

func (g *gitRepo) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, g.bin, append([]string{"-C", g.ws, "-c", "core.fsmonitor=false"}, args...)...)
	c.Env = gitEnv()
	c.WaitDelay = 2 * time.Second
	return c
}

// findGit returns the git repository of the workspace, or nil (no git, not a repository).
func findGit(bin, ws string) *gitRepo {
	if bin == "" {
		p, err := exec.LookPath("git")
		if err != nil {
			return nil
		}
		bin = p
	}
	g := &gitRepo{bin: bin, ws: ws, trust: true}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := g.cmd(ctx, "rev-parse", "--is-inside-work-tree", "--show-prefix", "--git-path", "index", "--git-path", "info/attributes", "--show-object-format").Output()
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) < 5 || lines[0] != "true" {
		return nil
	}
	g.prefix, g.index, g.infoAttrs = lines[1], lines[2], lines[3]
	for _, p := range []*string{&g.index, &g.infoAttrs} {
		if !filepath.IsAbs(*p) {
			*p = filepath.Join(ws, *p)
		}
	}
	g.sha256 = lines[4] == "sha256"
	// Exit status 1 when none is set.
	cfg, _ := g.cmd(ctx, "config", "-z", "--get-regexp", `^(core\.autocrlf|core\.attributesfile|attr\.tree)$`).Output()
	for _, kv := range strings.Split(string(cfg), "\x00") {
		k, v, _ := strings.Cut(kv, "\n")
		switch k {
		case "core.autocrlf":
			if v == "true" {
				g.trust = false
			}
		case "core.attributesfile":
			g.globalAttrs = v
		case "attr.tree":
			g.attrTree = true
		}
	}
	return g
}

// blobID is git's id of a blob with these bytes.
func (g *gitRepo) blobID(data []byte) string {
	hdr := "blob " + strconv.Itoa(len(data)) + "\x00"
	if g.sha256 {
		h := sha256.New()
		h.Write([]byte(hdr))
		h.Write(data)
		return hex.EncodeToString(h.Sum(nil))
	}
	h := sha1.New()
	h.Write([]byte(hdr))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// cleanEntry is what git's index says of a file: its path (below the workspace), its blob
// and the stat it had when git last looked at it. name and oid point into the index file's
// bytes.
type cleanEntry struct {
	name, oid          []byte
	exec               bool
	size, mtime, ctime int64
	ino                uint32
}

// readIndex reads git's index: each file of the workspace (stage 0, checked out) with its
// blob and stat, in path order. racy is the index file's mtime: an entry whose mtime is not
// older may have changed within the same tick and is not trusted. nil when the index cannot
// be read (a split index, say): then every file is read.
func (g *gitRepo) readIndex() ([]cleanEntry, int64) {
	if !g.trust {
		return nil, 0
	}
	f, err := fsopen.OpenFile(g.index, os.O_RDONLY, 0)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() > maxIndexBytes {
		return nil, 0
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, 0
	}
	hashLen := sha1.Size
	if g.sha256 {
		hashLen = sha256.Size
	}
	out, ok := parseIndex(data, g.prefix, hashLen)
	if !ok {
		return nil, 0
	}
	return out, fi.ModTime().UnixNano()
}

// parseIndex reads the entries of a git index file (versions 2 to 4, gitformat-index(5)) that
// are regular files below prefix, checked out and merged (stage 0), in path order, named by
// their path below prefix. false when it is not such a file, or a split index (its entries
// are elsewhere).
func parseIndex(b []byte, prefix string, hashLen int) ([]cleanEntry, bool) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, false
	}
	be := binary.BigEndian
	version, n := be.Uint32(b[4:]), int(be.Uint32(b[8:]))
	if version < 2 || version > 4 || n > len(b)/40 {
		return nil, false
	}
	out := make([]cleanEntry, 0, n)
	pos := 12
	var name []byte
	sorted := true
	for range n {
		// ctime, mtime (seconds, nanoseconds), dev, ino, mode, uid, gid, size: 32 bits
		// each; the object id; 16 bits of flags.
		start, fixed := pos, 40+hashLen+2
		if pos+fixed > len(b) {
			return nil, false
		}
		e := b[pos : pos+fixed]
		flags := be.Uint16(e[40+hashLen:])
		pos += fixed
		skip := (flags>>12)&3 != 0 // a stage of a merge
		if flags&0x4000 != 0 {
			// Extended flags (version 3 on): skip-worktree, intent-to-add.
			if version < 3 || pos+2 > len(b) {
				return nil, false
			}
			skip = skip || be.Uint16(b[pos:])&0x6000 != 0
			pos += 2
		}
		if version == 4 {
			// The path is the previous one less its last N bytes, then the bytes up to a
			// NUL: it is built in a buffer of its own.
			strip, k := offsetVarint(b[pos:])
			if k == 0 || strip > uint64(len(name)) {
				return nil, false
			}
			pos += k
			end := bytes.IndexByte(b[pos:], 0)
			if end < 0 {
				return nil, false
			}
			name = append(name[:len(name)-int(strip):len(name)-int(strip)], b[pos:pos+end]...)
			pos += end + 1
		} else {
			// The path, then 1 to 8 NULs that end the entry on a multiple of 8 bytes.
			end := bytes.IndexByte(b[pos:], 0)
			if end < 0 {
				return nil, false
			}
			name = b[pos : pos+end]
			pos += end
			pos += 8 - (pos-start)%8
		}
		mode := be.Uint32(e[24:])
		if skip || (mode != 0o100644 && mode != 0o100755) || !bytes.HasPrefix(name, []byte(prefix)) {
			continue
		}
		ce := cleanEntry{
			name: name[len(prefix):], oid: e[40 : 40+hashLen], exec: mode == 0o100755, size: int64(be.Uint32(e[36:])),
			ctime: int64(be.Uint32(e[0:]))*1e9 + int64(be.Uint32(e[4:])),
			mtime: int64(be.Uint32(e[8:]))*1e9 + int64(be.Uint32(e[12:])),
			ino:   be.Uint32(e[20:]),
		}
		if len(out) > 0 && bytes.Compare(out[len(out)-1].name, ce.name) >= 0 {
			sorted = false
		}
		out = append(out, ce)
	}
	// Extensions, each a signature and a size, up to the checksum.
	for pos+8 <= len(b)-hashLen {
		if string(b[pos:pos+4]) == "link" {
			return nil, false // a split index: most entries are in the shared index
		}
		pos += 8 + int(be.Uint32(b[pos+4:]))
	}
	if !sorted {
		slices.SortFunc(out, func(a, b cleanEntry) int { return bytes.Compare(a.name, b.name) })
	}
	return out, true
}

// offsetVarint decodes git's variable-length offset encoding (varint.c), returning the value
// and how many bytes it took (0: malformed).
func offsetVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 127)
	i := 1
	for c&128 != 0 {
		if i == len(b) || i > 9 {
			return 0, 0
		}
		c = b[i]
		i++
		v = (v+1)<<7 + uint64(c&127)
	}
	return v, i
}

// matches reports whether a file's lstat is the one git's index recorded, and not racy.
func (e cleanEntry) matches(s store.FileState, racy int64) bool {
	return s.Kind == store.KindFile && (s.Mode&0o111 != 0) == e.exec &&
		s.Size == e.size && s.Mtime == e.mtime && s.Ctime == e.ctime && uint32(s.Ino) == e.ino &&
		s.Mtime < racy
}

// converted returns the paths among rels whose checked-out bytes git converts (a filter, an
// end-of-line conversion, ident, a working-tree encoding): their bytes are not their blob's.
func (g *gitRepo) converted(ctx context.Context, rels []string) (map[string]bool, error) {
	c := g.cmd(ctx, "check-attr", "-z", "--stdin", "filter", "eol", "ident", "working-tree-encoding")
	var in bytes.Buffer
	for _, r := range rels {
		in.WriteString(r)
		in.WriteByte(0)
	}
	c.Stdin = &in
	out, err := c.Output()
	if err != nil {
		return nil, err
	}
	conv := map[string]bool{}
	f := bytes.Split(out, []byte{0})
	for i := 0; i+2 < len(f); i += 3 {
		attr, val := string(f[i+1]), string(f[i+2])
		if val == "unspecified" || val == "unset" || (attr == "eol" && val == "lf") {
			continue
		}
		conv[string(f[i])] = true
	}
	return conv, nil
}

// convertAttrs are the attributes converted asks about.
var convertAttrs = []string{"filter", "eol", "ident", "working-tree-encoding"}

// mayConvert reports whether an attributes file could set one of convertAttrs (a macro that
// sets one names it in its definition too). A false positive only costs a check-attr.
func mayConvert(data []byte) bool {
	for _, a := range convertAttrs {
		if bytes.Contains(data, []byte(a)) {
			return true
		}
	}
	return false
}

// fileMayConvert is mayConvert of the attributes file at abs: false when it does not
// exist, true when it cannot be read.
func fileMayConvert(abs string) bool {
	f, err := fsopen.OpenFile(abs, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false
	}
	if err != nil {
		return true
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxAttrsBytes+1))
	return err != nil || len(data) > maxAttrsBytes || mayConvert(data)
}

const maxAttrsBytes = 4 << 20

// attrsOutside reports whether an attributes file outside the workspace could convert
// files of it: $GIT_DIR/info/attributes, the user's and the system's, a .gitattributes in
// a folder between the repository's top and the workspace, a tree git reads them from.
func (g *gitRepo) attrsOutside() bool {
	if g.attrTree || os.Getenv("GIT_ATTR_SOURCE") != "" {
		return true
	}
	files := []string{g.infoAttrs}
	switch global := g.globalAttrs; {
	case strings.HasPrefix(global, "~/"):
		home, _ := os.UserHomeDir()
		files = append(files, filepath.Join(home, global[2:]))
	case global != "":
		files = append(files, global)
	case os.Getenv("XDG_CONFIG_HOME") != "":
		files = append(files, filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "git", "attributes"))
	default:
		if home, err := os.UserHomeDir(); err == nil {
			files = append(files, filepath.Join(home, ".config", "git", "attributes"))
		}
	}
	if v := strings.ToLower(os.Getenv("GIT_ATTR_NOSYSTEM")); v == "" || v == "0" || v == "false" || v == "no" || v == "off" {
		// $(prefix)/etc/gitattributes, and /etc/gitattributes where distributions put it.
		files = append(files, "/etc/gitattributes", filepath.Join(filepath.Dir(filepath.Dir(g.bin)), "etc", "gitattributes"))
	}
	dir := g.ws
	for range strings.Count(g.prefix, "/") {
		dir = filepath.Dir(dir)
		files = append(files, filepath.Join(dir, ".gitattributes"))
	}
	for _, f := range files {
		if fileMayConvert(f) {
			return true
		}
	}
	return false
}

// gitLook is what the first look at a workspace learns of its git repository while it
// walks the workspace: the repository, and which files git's index vouches for.
type gitLook struct {
	repo  *gitRepo
	clean []cleanEntry // in path order; nil: git vouches for no file
	racy  int64
	// Files whose checked-out bytes git converts, asked of git (check-attr) only when an
	// attributes file could convert something; checked are the workspace's attributes
	// files looked at for that.
	conv    map[string]bool
	asked   bool
	convErr error
	checked map[string]bool
}

// look finds the repository, and with index reads its index (a workspace never seen).
func (gl *gitLook) look(ctx context.Context, bin, ws string, index bool) {
	if gl.repo = findGit(bin, ws); gl.repo == nil || !index {
		return
	}
	if gl.clean, gl.racy = gl.repo.readIndex(); len(gl.clean) == 0 {
		return
	}
	may := gl.repo.attrsOutside()
	gl.checked = map[string]bool{}
	for _, e := range gl.clean {
		if p := e.name; bytes.Equal(p, []byte(".gitattributes")) || bytes.HasSuffix(p, []byte("/.gitattributes")) {
			gl.checked[string(p)] = true
			may = may || fileMayConvert(filepath.Join(ws, filepath.FromSlash(string(p))))
		}
	}
	if may {
		gl.ask(ctx)
	}
}

func (gl *gitLook) ask(ctx context.Context) {
	paths := make([]string, 0, len(gl.clean))
	for _, e := range gl.clean {
		paths = append(paths, string(e.name))
	}
	gl.asked = true
	gl.conv, gl.convErr = gl.repo.converted(ctx, paths)
}

// finish completes the look after the walk (all): a .gitattributes file that git's index
// does not list may convert files too. It returns the error of check-attr.
func (gl *gitLook) finish(ctx context.Context, all []walked) error {
	if len(gl.clean) == 0 || gl.asked {
		return gl.convErr
	}
	for _, e := range all {
		if path.Base(e.rel) == ".gitattributes" && !gl.checked[e.rel] && fileMayConvert(filepath.Join(gl.repo.ws, filepath.FromSlash(e.rel))) {
			gl.ask(ctx)
			break
		}
	}
	return gl.convErr
}

// converts reports whether git converts the checked-out bytes of the file p (true when
// that could not be asked).
func (gl *gitLook) converts(p string) bool { return gl.convErr != nil || gl.conv[p] }

// blobs reads blobs from the repository's object store (git cat-file --batch). Missing ones
// are left out.
func (g *gitRepo) blobs(ctx context.Context, oids []string, max int64) (map[string][]byte, error) {
	c := g.cmd(ctx, "cat-file", "--batch")
	var in bytes.Buffer
	for _, o := range oids {
		in.WriteString(o)
		in.WriteByte('\n')
	}
	c.Stdin = &in
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = c.Wait() }()
	r := bufio.NewReader(stdout)
	out := map[string][]byte{}
	for range oids {
		hdr, err := r.ReadString('\n')
		if err != nil {
			return out, err
		}
		f := strings.Fields(hdr)
		if len(f) == 2 && f[1] == "missing" {
			continue
		}
		if len(f) != 3 {
			return out, fmt.Errorf("git cat-file: unexpected header %q", hdr)
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return out, fmt.Errorf("git cat-file: unexpected header %q", hdr)
		}
		if f[1] != "blob" || n > max {
			if _, err := r.Discard(int(n) + 1); err != nil {
				return out, err
			}
			continue
		}
		data := make([]byte, n+1)
		if _, err := io.ReadFull(r, data); err != nil {
			return out, err
		}
		out[f[0]] = data[:n]
	}
	return out, nil
}

// copyFromGit keeps in the store the bytes of states known only to the workspace's git
// store (a clean file a call changed), checked against their blob id.
func (t *Tracker) copyFromGit(ctx context.Context, states []*store.FileState) {
	if t.git == nil {
		for _, s := range states {
			s.NotKept = "not kept (the git repository is gone)"
		}
		return
	}
	var oids []string
	for _, s := range states {
		oids = append(oids, s.Git)
	}
	blobs, err := t.git.blobs(ctx, oids, t.opts.MaxFileBytes)
	if err != nil {
		t.log.Warn("reading blobs from the workspace's git store failed", "err", err)
	}
	for _, s := range states {
		data, ok := blobs[s.Git]
		if !ok || t.git.blobID(data) != s.Git {
			s.NotKept = "not in the workspace's git store any more"
			continue
		}
		id, err := t.st.PutContent(data)
		if err != nil {
			s.NotKept = "could not be stored: " + err.Error()
			continue
		}
		s.Content = id
	}
}
