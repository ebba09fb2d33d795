#!/usr/bin/env bash
# Packages the extension for the platforms VS Code runs on, as rust-analyzer ships its server: one
# platform-specific .vsix per target (vsce package --target), each carrying in bin/ the toolsd
# daemon cross-compiled from this repo (CGO_ENABLED=0, -trimpath, stripped), and toolsd-guard
# where cmd/toolsd-guard builds for the target. Windows binaries end in .exe.
#
# Usage: scripts/package.sh OUT_DIR [TARGET...]
#   TARGET: linux-x64 linux-arm64 darwin-arm64 darwin-x64 win32-x64 (default: all five)
# Writes OUT_DIR/toolsd-TARGET.vsix. A target whose binaries do not build gets
# OUT_DIR/toolsd-TARGET.error (the go build output) instead; the others are still packaged, and
# the script ends with exit code 1 naming the targets that failed. Needs `npm ci` first.
# bin/ is this script's: emptied before each target, removed at the end.
set -euo pipefail
EXT=$(cd "$(dirname "$0")/.." && pwd)
REPO=$(cd "$EXT/.." && pwd)
[ $# -ge 1 ] || { sed -n '7,8p' "$0" >&2; exit 2; }
OUT_ARG=$1
shift
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(linux-x64 linux-arm64 darwin-arm64 darwin-x64 win32-x64)

goos_goarch() {
  case $1 in
    linux-x64) echo linux amd64 ;;
    linux-arm64) echo linux arm64 ;;
    darwin-arm64) echo darwin arm64 ;;
    darwin-x64) echo darwin amd64 ;;
    win32-x64) echo windows amd64 ;;
    *) echo "package.sh: unknown target $1 (known: linux-x64 linux-arm64 darwin-arm64 darwin-x64 win32-x64)" >&2; return 1 ;;
  esac
}
for t in "${TARGETS[@]}"; do goos_goarch "$t" >/dev/null; done
mkdir -p "$OUT_ARG"
OUT=$(cd "$OUT_ARG" && pwd)

cd "$EXT"
trap 'rm -rf "$EXT/bin"' EXIT
echo "package: typecheck and bundle (production)"
npm run -s typecheck
node esbuild.mjs --production >/dev/null

failed=()
for t in "${TARGETS[@]}"; do
  read -r goos goarch < <(goos_goarch "$t")
  vsix="$OUT/toolsd-$t.vsix"
  rm -rf "$EXT/bin" "$vsix" "$OUT/toolsd-$t.error"
  mkdir -p "$EXT/bin"
  pkgs=(./cmd/toolsd)
  # toolsd-guard goes where its build constraints let it build; toolsd runs its guards itself elsewhere.
  if [ "$(cd "$REPO" && GOOS=$goos GOARCH=$goarch go list -e -f '{{len .GoFiles}}' ./cmd/toolsd-guard)" != 0 ]; then
    pkgs+=(./cmd/toolsd-guard)
  fi
  if ! (cd "$REPO" && GOOS=$goos GOARCH=$goarch CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$EXT/bin/" "${pkgs[@]}") \
      > "$OUT/toolsd-$t.error" 2>&1; then
    echo "package: $t: go build ${pkgs[*]} failed for $goos/$goarch (see $OUT/toolsd-$t.error):" >&2
    head -5 "$OUT/toolsd-$t.error" | sed 's/^/  /' >&2
    failed+=("$t")
    continue
  fi
  rm -f "$OUT/toolsd-$t.error"
  if ! node_modules/.bin/vsce package --target "$t" --no-dependencies -o "$vsix" > "$OUT/vsce-$t.log" 2>&1; then
    cat "$OUT/vsce-$t.log" >&2
    echo "package: $t: vsce package failed" >&2
    exit 1
  fi
  rm -f "$OUT/vsce-$t.log"
  echo "package: $vsix ($(cd bin && ls | tr '\n' ' '| sed 's/ $//'); $(du -k "$vsix" | cut -f1) KiB)"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "package: no vsix for ${failed[*]}: the binaries did not build" >&2
  exit 1
fi
