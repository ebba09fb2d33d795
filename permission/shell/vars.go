package shell

import (
	"strings"
)

// safeVars are environment variables known to change nothing about what runs, where
// programs are found, what they load or where they connect: an assignment to one of them
// (FOO=x cmd, export FOO=x, FOO=x alone) is understood. Any other name makes the line opaque:
// programs read their own variables (GIT_*, NPM_CONFIG_*, LD_PRELOAD, PYTHONPATH,
// RUSTFLAGS, ...) and no list of the dangerous ones can be complete.
var safeVars = set("CI NODE_ENV RAILS_ENV RACK_ENV APP_ENV FLASK_ENV FLASK_DEBUG DJANGO_DEBUG " +
	"DEBUG VERBOSE QUIET LOG_LEVEL LOGLEVEL RUST_BACKTRACE RUST_LOG RUST_TEST_THREADS RUST_MIN_STACK " +
	"GOOS GOARCH GOARM GOAMD64 GO386 CGO_ENABLED GOMAXPROCS GOGC GOMEMLIMIT GOTRACEBACK GODEBUG GO111MODULE " +
	"TZ LANG LANGUAGE LC_ALL LC_CTYPE LC_MESSAGES LC_NUMERIC LC_TIME LC_COLLATE " +
	"NO_COLOR FORCE_COLOR CLICOLOR CLICOLOR_FORCE TERM COLUMNS LINES COLORTERM " +
	"PYTHONUNBUFFERED PYTHONDONTWRITEBYTECODE PYTHONHASHSEED PYTHONIOENCODING PYTHONUTF8 PYTHONFAULTHANDLER " +
	"NODE_NO_WARNINGS CARGO_TERM_COLOR CARGO_INCREMENTAL HUSKY SKIP_HOOKS TIMEOUT CONCURRENCY JOBS " +
	"NEXT_TELEMETRY_DISABLED DOTNET_CLI_TELEMETRY_OPTOUT DO_NOT_TRACK SOURCE_DATE_EPOCH")

// assignable says why setting the variable name is outside the subset ("" when it is not):
// the names bash or programs read to decide what runs are named for what they do.
func assignable(name string) string {
	if safeVars[name] {
		return ""
	}
	if isShellName(name) && strings.ToLower(name) == name && !lowerEnvFamily(name) {
		// A lowercase shell variable: bash's own are uppercase, and programs read few
		// lowercase names (the proxy family and npm's config, refused below).
		return ""
	}
	switch {
	case name == "PATH" || name == "CDPATH" || name == "BASH_CMDS" || name == "BASH_ALIASES" || name == "EXECIGNORE":
		return "which changes where later commands are found"
	case name == "BASH_ENV" || name == "ENV" || name == "PROMPT_COMMAND" || name == "PS4" || name == "SHELLOPTS" || name == "BASHOPTS" || strings.HasPrefix(name, "BASH_FUNC_"):
		return "which makes bash run code at startup or later"
	case name == "IFS":
		return "which changes how words are split"
	case strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "DYLD_"):
		return "which changes what programs load"
	case strings.HasPrefix(name, "GIT_"):
		return "which changes what git runs and where it looks"
	}
	return "a variable toolsd does not know to be harmless (programs read variables that change what they run or load)"
}

func isShellName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// lowerEnvFamily reports lowercase variables that programs read: proxies, npm/yarn/pnpm
// configuration, bash's histchars and auto_resume.
func lowerEnvFamily(name string) bool {
	if strings.Contains(name, "proxy") || name == "histchars" || name == "auto_resume" {
		return true
	}
	for _, p := range []string{"npm_", "yarn_", "pnpm_", "bun_", "pip_", "conda_", "uv_", "poetry_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
