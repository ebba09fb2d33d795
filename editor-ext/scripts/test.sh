#!/usr/bin/env bash
# The extension's build and unit tests: npm ci, typecheck + bundle, build the real daemon from this
# repo, and run the unit tests (node's test runner) against it. Exits non-zero on any failure; the
# last lines are node's test runner summary.
set -euo pipefail
EXT=$(cd "$(dirname "$0")/.." && pwd)
REPO=$(cd "$EXT/.." && pwd)
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

cd "$EXT"
echo "=== editor-ext: npm ci"
npm ci --no-progress >/dev/null
echo "=== editor-ext: typecheck, bundle, package (toolsd.vsix)"
npm run -s package >/dev/null
npm run -s build
echo "=== editor-ext: build the daemon (CGO_ENABLED=0 go build ./cmd/toolsd, as the README builds it)"
BIN_DIR=$(mktemp -d -t toolsd-ext-bin.XXXXXX)
# The daemons these tests start own their workspaces in a runtime folder of their own.
export XDG_RUNTIME_DIR=$(mktemp -d -t toolsd-ext-rt.XXXXXX)
trap 'rm -rf "$BIN_DIR" "$XDG_RUNTIME_DIR"' EXIT
(cd "$REPO" && CGO_ENABLED=0 go build -o "$BIN_DIR/" ./cmd/toolsd ./cmd/toolsd-guard)
echo "=== editor-ext: unit tests against $BIN_DIR/toolsd"
npm run -s build:tests
TOOLSD_BIN="$BIN_DIR/toolsd" node --test --test-reporter=spec --test-reporter-destination=stdout out/test/*.test.js
