#!/usr/bin/env bash
# The extension's build and unit tests: npm ci, typecheck + bundle, package a vsix per platform
# (scripts/package.sh), build the real daemon from this repo, and run the unit tests (node's test
# runner) against it, test/vsix.test.ts on the packages. Exits non-zero on any failure; the last
# lines are node's test runner summary.
set -euo pipefail
EXT=$(cd "$(dirname "$0")/.." && pwd)
REPO=$(cd "$EXT/.." && pwd)
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

BIN_DIR=$(mktemp -d -t toolsd-ext-bin.XXXXXX)
VSIX_DIR=$(mktemp -d -t toolsd-ext-vsix.XXXXXX)
# The daemons these tests start own their workspaces in a runtime folder of their own.
export XDG_RUNTIME_DIR=$(mktemp -d -t toolsd-ext-rt.XXXXXX)
trap 'rm -rf "$BIN_DIR" "$VSIX_DIR" "$XDG_RUNTIME_DIR"' EXIT

cd "$EXT"
echo "=== editor-ext: npm ci"
npm ci --no-progress >/dev/null
echo "=== editor-ext: typecheck, bundle, package a vsix per platform (scripts/package.sh)"
# A target whose binaries do not build has no vsix: test/vsix.test.ts below names it and fails.
bash scripts/package.sh "$VSIX_DIR" || echo "=== editor-ext: packaging failed; test/vsix.test.ts says which target" >&2
npm run -s build
echo "=== editor-ext: build the daemon (CGO_ENABLED=0 go build ./cmd/toolsd, as the README builds it)"
(cd "$REPO" && CGO_ENABLED=0 go build -o "$BIN_DIR/" ./cmd/toolsd ./cmd/toolsd-guard)
echo "=== editor-ext: unit tests against $BIN_DIR/toolsd"
npm run -s build:tests
TOOLSD_BIN="$BIN_DIR/toolsd" TOOLSD_VSIX_DIR="$VSIX_DIR" node --test --test-reporter=spec --test-reporter-destination=stdout out/test/*.test.js
