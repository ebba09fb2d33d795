package sandbox

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/toolsd/toolsd/internal/protect"
)

// The kernel does not tell a process that the sandbox refused it: a refused write reads
// "Permission denied" (EACCES) or "Read-only file system" (EROFS), a refused socket
// "Operation not permitted" (EPERM). Explain reads a failed command's output for those
// errors and the paths they name, and says which of them the policy explains.

// The patterns are compiled on first use: every toolsd process (guards and sandbox stages
// too) paid about 0.4 ms at init for them.
var (
	deniedRe  = lazyRe(`(?i)permission denied|eacces|read-only file system|erofs|operation not permitted|eperm|device or resource busy|invalid cross-device link|exdev`)
	networkRe = lazyRe(`(?i)could not resolve host|temporary failure in name resolution|name or service not known|no such host|enotfound|eai_again|getaddrinfo|network is unreachable|couldn't connect to server|failed to connect|connection refused|dial tcp|dial udp|socket: operation not permitted|address family not supported|unable to access 'https?://|could not connect|connecterror|econnrefused|enetunreach`)
	quotedRe  = lazyRe("'([^']+)'|\"([^\"]+)\"|`([^`]+)`|‘([^’]+)’")
	procsRe   = lazyRe(`more than the sandbox allows`)
)

func lazyRe(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Explain returns what the sandbox blocked, one sentence each, judging by a failed command's
// output (its last part is enough). workdir is where the command ran (paths in the output
// are relative to it); mode is the mode it ran in; blocked are the proxy's refusals.
func Explain(p *Policy, mode, workdir, output string, blocked []string) []string {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) && len(out) < 6 {
			out = append(out, s)
		}
	}
	for _, b := range blocked {
		add(fmt.Sprintf("connecting to %s: the sandbox's proxy lets a command reach only the domains in sandbox.network.allow", b))
	}
	netSaid := false
	for _, line := range strings.Split(output, "\n") {
		if procsRe().MatchString(line) {
			add(fmt.Sprintf("starting more than %d processes at once: the sandbox killed the command", p.MaxProcs))
			continue
		}
		if deniedRe().MatchString(line) {
			said := false
			for _, c := range pathsIn(line) {
				if s := explainPath(p, mode, workdir, c); s != "" {
					add(s)
					said = true
				}
			}
			if !said && !networkRe().MatchString(line) {
				// A refusal whose path is not in the line, or is relative to a folder the
				// command moved to: say what the sandbox allows, with the line.
				add(fmt.Sprintf("%q: if this was a write outside %s or a read of a hidden path, the sandbox refused it", strings.TrimSpace(line), strings.Join(p.Write, ", ")))
			}
			if strings.Contains(strings.ToLower(line), "socket") && !p.UnixSockets && strings.Contains(strings.ToLower(line), "unix") {
				add("creating a Unix socket: the sandbox refuses them (they reach the daemon, agents and container engines)")
			}
		}
		if !netSaid && p.Net.Mode != NetDirect && networkRe().MatchString(line) {
			netSaid = true
			switch p.Net.Mode {
			case NetNone:
				add("network access: commands have no network in the sandbox; the person can let some domains through its proxy (sandbox.network.allow in the settings)")
			case NetProxy:
				if len(blocked) == 0 {
					add(fmt.Sprintf("network access other than HTTP(S) through the sandbox's proxy (allowed: %s); direct connections and DNS lookups are refused", strings.Join(p.Net.Allow, ", ")))
				}
			}
		}
	}
	return out
}

// pathsIn returns the words of line that may be paths: quoted strings, and words with a
// slash or ending in a colon.
func pathsIn(line string) []string {
	var out []string
	// "prog: line 1: PATH: Permission denied": the part before the error.
	parts := strings.Split(line, ": ")
	for i := 1; i < len(parts); i++ {
		if deniedRe().MatchString(parts[i]) {
			out = append(out, strings.Trim(parts[i-1], "'\"`‘’"))
		}
	}
	for _, m := range quotedRe().FindAllStringSubmatch(line, -1) {
		for _, g := range m[1:] {
			if g != "" {
				out = append(out, g)
			}
		}
	}
	for _, w := range strings.Fields(line) {
		w = strings.Trim(w, ":,;()[]'\"`‘’")
		if strings.Contains(w, "/") && !strings.Contains(w, "://") {
			out = append(out, w)
		}
	}
	return out
}

// explainPath says why the policy refused c, or "" when it does not explain a refusal there.
func explainPath(p *Policy, mode, workdir, c string) string {
	c = strings.TrimSpace(c)
	if c == "" || strings.ContainsAny(c, "\x00\n") || len(c) > 4096 {
		return ""
	}
	abs := c
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(workdir, abs)
	}
	abs = filepath.Clean(abs)
	r := real(abs)
	switch {
	case within(r, p.Deny):
		return fmt.Sprintf("%s: the sandbox hides it (secrets and the daemon's own folders cannot be read or written; sandbox.deny in the settings)", c)
	case within(r, p.Protect):
		why, _ := protect.Check(p.Workspace, r)
		if why == "" {
			why = "a git folder or git configuration outside the workspace"
		}
		advice := "a confined command cannot change what git, the editor, the agents or toolsd run outside the sandbox later"
		if isGit(why) {
			advice += "; git commands that write the repository (add, commit, checkout, switch, stash, fetch, pull) run only outside the sandbox"
		}
		return fmt.Sprintf("%s: read-only in the sandbox (%s): %s", c, why, advice)
	case !within(r, p.Write):
		return fmt.Sprintf("writing %s: outside the folders a command may write in the sandbox (%s; more in sandbox.write in the settings)", c, strings.Join(p.Write, ", "))
	case mode == ModeLandlock:
		for _, pr := range p.Protect {
			if dir := filepath.Dir(pr); filepath.Dir(r) == dir {
				return fmt.Sprintf("creating, renaming or removing %s: without user namespaces the sandbox keeps %s read-only with Landlock, which refuses new entries in %s", c, pr, dir)
			}
		}
	}
	return ""
}

// isGit reports whether a protected path's reason is about git.
func isGit(why string) bool {
	return strings.Contains(why, ".git") || strings.Contains(why, "git folder")
}
