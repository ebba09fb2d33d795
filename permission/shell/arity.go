package shell

import (
	"strings"
)

// arity gives, for a command or a command with subcommands, how many leading words name
// what it does: "git status --short" has arity 2 (git status), "npm run build -- --watch"
// arity 3 (npm run build). The longest matching key wins; a command not in the table has
// arity 1.
var arity = map[string]int{
	"git": 2, "git remote": 3, "git stash": 3, "git submodule": 3, "git worktree": 3, "git config": 3, "git lfs": 3, "git notes": 3, "git bisect": 3,
	"npm": 2, "npm run": 3, "npm run-script": 3, "npm exec": 3, "npm x": 3,
	"pnpm": 2, "pnpm run": 3, "pnpm exec": 3, "pnpm dlx": 3,
	"yarn": 2, "yarn run": 3, "yarn workspace": 4, "yarn dlx": 3,
	"bun": 2, "bun run": 3, "bun x": 3, "bunx": 2,
	"npx": 2, "pnpx": 2,
	"deno": 2, "deno task": 3, "deno run": 2,
	"node": 1, "corepack": 2,
	"go": 2, "go mod": 3, "go tool": 3, "go work": 3,
	"cargo": 2, "rustup": 2, "rustup toolchain": 3, "rustup target": 3, "rustup component": 3,
	"docker": 2, "docker compose": 3, "docker container": 3, "docker image": 3, "docker network": 3, "docker volume": 3, "docker buildx": 3, "docker system": 3,
	"docker-compose": 2, "podman": 2, "nerdctl": 2,
	"kubectl": 2, "kubectl config": 3, "kubectl rollout": 3, "helm": 2, "helm repo": 3, "kind": 2, "minikube": 2,
	"pip": 2, "pip3": 2, "pipx": 2, "poetry": 2, "uv": 2, "uv pip": 3, "uv run": 2, "pipenv": 2, "conda": 2, "mamba": 2,
	"python -m": 3, "python3 -m": 3, "py -m": 3,
	"gem": 2, "bundle": 2, "bundle exec": 3, "rake": 2, "rails": 2,
	"brew": 2, "apt": 2, "apt-get": 2, "apt-cache": 2, "dnf": 2, "yum": 2, "pacman": 2, "apk": 2, "snap": 2, "flatpak": 2, "port": 2, "nix": 2,
	"systemctl": 2, "launchctl": 2, "service": 3,
	"gh": 3, "gh api": 2, "glab": 3,
	"terraform": 2, "terraform state": 3, "terraform workspace": 3, "tofu": 2, "pulumi": 2, "packer": 2, "vagrant": 2, "ansible-galaxy": 3,
	"aws": 3, "gcloud": 3, "az": 3, "doctl": 3, "flyctl": 2, "fly": 2, "heroku": 2, "vercel": 2, "netlify": 2, "wrangler": 2, "firebase": 2, "supabase": 2,
	"dotnet": 2, "dotnet tool": 3, "nuget": 2, "mvn": 2, "gradle": 2, "./gradlew": 2, "./mvnw": 2, "sbt": 2, "lein": 2, "clojure": 2,
	"mix": 2, "rebar3": 2, "composer": 2, "php artisan": 3, "swift": 2, "swift package": 3, "xcodebuild": 1, "flutter": 2, "dart": 2, "pod": 2,
	"make": 2, "gmake": 2, "just": 2, "task": 2, "cmake": 1, "ninja": 2, "bazel": 2, "bazelisk": 2, "buck2": 2, "nx": 2, "turbo": 2, "lerna": 2,
	"tsc": 1, "eslint": 1, "prettier": 1, "jest": 1, "vitest": 2, "pytest": 1, "ruff": 2, "black": 1, "mypy": 1, "tox": 1, "nox": 1,
	"zig": 2, "stack": 2, "cabal": 2, "opam": 2, "dune": 2, "julia": 1, "R": 1,
	"hg": 2, "svn": 2, "jj": 2, "sl": 2,
	"openssl": 2, "gpg": 2, "ssh-keygen": 1, "tmux": 2, "screen": 1, "code": 1,
}

// exactOnly are commands for which no prefix may be offered: what they do depends on their
// arguments too much (rm *, sudo *, python *, curl * would allow anything).
var exactOnly = map[string]bool{
	"rm": true, "rmdir": true, "unlink": true, "shred": true, "mv": true, "cp": true, "dd": true, "ln": true,
	"chmod": true, "chown": true, "chgrp": true, "chattr": true, "truncate": true, "install": true, "rsync": true,
	"scp": true, "mkfs": true, "fdisk": true, "parted": true, "mount": true, "umount": true, "kill": true,
	"killall": true, "pkill": true, "reboot": true, "shutdown": true, "halt": true, "poweroff": true,
	"sudo": true, "doas": true, "su": true, "pkexec": true, "runuser": true, "chroot": true,
	"curl": true, "wget": true, "nc": true, "ncat": true, "netcat": true, "socat": true, "ssh": true, "telnet": true, "ftp": true,
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "fish": true, "csh": true, "tcsh": true, "yash": true, "posh": true,
	"python": true, "python3": true, "python2": true, "py": true, "node": true, "deno": false, "perl": true, "ruby": true,
	"php": true, "lua": true, "luajit": true, "Rscript": true, "osascript": true, "pwsh": true, "powershell": true,
	"awk": true, "gawk": true, "xargs": true, "env": true, "eval": true, "exec": true, "source": true, ".": true,
	"crontab": true, "at": true, "iptables": true, "ufw": true, "systemd-run": true, "tee": true, "find": true,
	"git": false, "docker": false, "npm": false, "trap": true, "alias": true, "export": true, "unset": true,
}

// destructiveSub are subcommands that delete, publish or force: "git push", "kubectl delete",
// "terraform destroy" offer only their exact text.
var destructiveSub = map[string]bool{
	"rm": true, "rmi": true, "delete": true, "del": true, "destroy": true, "prune": true, "purge": true,
	"clean": true, "reset": true, "push": true, "publish": true, "unpublish": true, "uninstall": true,
	"remove": true, "kill": true, "drop": true, "apply": true, "deploy": true, "exec": true, "run": false,
	"restore": true, "checkout": true, "rebase": true, "filter-branch": true, "filter-repo": true, "gc": true,
	"truncate": true, "wipe": true, "nuke": true, "eject": true, "login": true, "logout": true, "import": true,
	"eval": true, "shell": true, "ssh": true, "cp": true, "mv": true, "set": true, "unset": true, "sql": true,
}

// always returns the patterns an "always" answer may offer for the command ws: the exact
// text, and the arity prefix unless the command is exact-only or its arguments are unsafe
// (a prefix could not allow this very command again).
func always(ws []word, unsafe bool) []string {
	exact := Escape(join(ws))
	if unsafe {
		return []string{exact}
	}
	name := ws[0].text
	n, key := 1, 1
	prefix := name
	for k := 1; k <= 3 && k <= len(ws); k++ {
		if k > 1 {
			prefix += " " + ws[k-1].text
		}
		if a, ok := arity[prefix]; ok {
			n, key = a, k // the longest key wins
		}
	}
	if key == 1 && exactOnly[name] || strings.Contains(name, "/") && name != "./gradlew" && name != "./mvnw" {
		return []string{exact}
	}
	if n > len(ws) {
		n = len(ws)
	}
	for i := 0; i < n; i++ {
		w := ws[i]
		if !w.static || w.glob || strings.HasPrefix(w.text, "-") && !(i == 1 && w.text == "-m") || w.text == "" ||
			strings.ContainsAny(w.text, " \t\n") || i > 0 && destructiveSub[w.text] {
			return []string{exact}
		}
	}
	prefix = Escape(join(ws[:n])) + " *"
	return []string{exact, prefix}
}

// Escape makes s a pattern that matches s alone: \, * and ? get a backslash (the escapes of
// permission.Match).
func Escape(s string) string {
	if !strings.ContainsAny(s, `\*?`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '*', '?':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
