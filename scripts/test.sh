#!/usr/bin/env bash
# Runs every test of toolsd, as CI does: the Go packages (gofmt, go vet, a build and go vet
# for every other target, the race detector on), then the VS Code extension's unit tests
# against the real daemon, then its end-to-end run in a real VS Code (code-server in headless Chromium). Installs what it needs: Go
# modules, the npm packages of the extension, of the Go tests' MCP TypeScript client
# (testdata/mcpclient; npm ci), of the ACP TypeScript agent (testdata/acpagent), of the real agent CLIs (testdata/agents) and ACP adapter (testdata/acpadapter), and for the end-to-end run Debian's
# chromium and the npm packages of code-server and playwright-core (cached outside the repo).
#
# TOOLSD_SKIP_EXT=1 stops after the Go tests; TOOLSD_SKIP_E2E=1 skips only the VS Code run.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
say() { printf '\n=== [+%ss] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }

say "go: modules"
go mod download

say "go: gofmt and vet"
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^editor-ext/') 2>&1 || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...

say "go: every target builds and vets (macOS, Windows, Linux on arm64)"
# The OS-specific code sits behind build tags in files named for the OS; only Linux runs the
# tests here, so this is where the others are compiled and vetted.
for target in darwin/arm64 darwin/amd64 windows/amd64 linux/arm64; do
  GOOS=${target%/*} GOARCH=${target#*/} go build -o /dev/null ./cmd/toolsd
  GOOS=${target%/*} GOARCH=${target#*/} go build -o /dev/null ./cmd/toolsd-guard
  GOOS=${target%/*} GOARCH=${target#*/} go vet ./...
done

say "testdata/mcpclient: npm ci (the MCP TypeScript client of the end-to-end tests)"
if grep -q '"resolved"' testdata/mcpclient/package-lock.json; then
  echo "testdata/mcpclient/package-lock.json records where packages came from: strip the resolved fields (npm ci installs from integrity)" >&2
  exit 1
fi
(cd testdata/mcpclient && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

say "testdata/acpagent: npm ci (the official ACP TypeScript SDK's agent of toolsd acp's tests)"
if grep -q '"resolved"' testdata/acpagent/package-lock.json; then
  echo "testdata/acpagent/package-lock.json records where packages came from: strip the resolved fields (npm ci installs from integrity)" >&2
  exit 1
fi
(cd testdata/acpagent && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || echo "testdata/acpagent: npm ci failed; TestACPProxyOfficialSDK will skip" >&2

say "testdata/agents: npm ci (the real Claude Code and Codex CLIs of cmd/toolsd's agent tests)"
if grep -q '"resolved"' testdata/agents/package-lock.json; then
  echo "testdata/agents/package-lock.json records where packages came from: strip the resolved fields (npm ci installs from integrity)" >&2
  exit 1
fi
# Best effort: where the packages cannot be installed, those tests skip and say why.
(cd testdata/agents && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || echo "testdata/agents: npm ci failed; the real-agent tests will skip" >&2

say "testdata/acpadapter: npm ci (Zed's claude-agent-acp, the real ACP adapter of toolsd acp's tests)"
if grep -q '"resolved"' testdata/acpadapter/package-lock.json; then
  echo "testdata/acpadapter/package-lock.json records where packages came from: strip the resolved fields (npm ci installs from integrity)" >&2
  exit 1
fi
(cd testdata/acpadapter && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || echo "testdata/acpadapter: npm ci failed; TestACPRealAdapter will skip" >&2

say "go: tests (race detector on)"
go test -race -count=1 -timeout 20m ./...

if [ "${TOOLSD_SKIP_EXT:-0}" = 1 ]; then
  say "done (extension skipped)"; exit 0
fi

say "editor-ext: unit tests against the real daemon"
bash editor-ext/scripts/test.sh

if [ "${TOOLSD_SKIP_E2E:-0}" != 1 ]; then
  say "editor-ext: end to end in a real VS Code"
  bash editor-ext/test/e2e/run.sh
fi
say "all tests passed"
