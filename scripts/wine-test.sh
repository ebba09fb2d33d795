#!/usr/bin/env bash
# Runs the Windows test binaries of the packages with Windows code under wine, on a Linux
# developer's machine: a check of the Windows code short of a Windows machine. It is not part
# of scripts/test.sh or CI (CI has no wine; there `GOOS=windows go vet` is the check), and a
# pass here is not a pass on Windows: wine lacks some of what the code uses, and the tests
# that meet a known limit skip under wine with the reason (package internal/wine).
#
# Usage: scripts/wine-test.sh [PACKAGE...]   (default: every package with a *_windows*.go
#        file, and internal/fsopen, internal/protect and store, which run on internal/posix)
#
# Wine 8 is looked for at $WINE, then on PATH, then at /usr/lib/wine/wine64. Everything runs
# in a private wine prefix under a temporary folder, removed at the end (never ~/.wine); the
# stand-in bcryptprimitives.dll that Go 1.24+ programs need (internal/wine) goes into its
# system32. Each package's log is kept in $WINE_TEST_LOGS when that is set.
#
# One line per package: ok, FAIL and the tests that failed, or UNSURE and the tests that
# failed in t.TempDir's cleanup after saying something else (often a skip for a reason of
# Windows'; the log tells). Every test with a t.TempDir fails its cleanup under wine 8 (Go's
# RemoveAll deletes with FileDispositionInformationEx, which wine does not implement): those
# failures alone are counted as wine's, not the test's. cmd/toolsd's TestScripts needs a go
# command, which wine has not. The exit status is 1 when a line is not ok.
set -euo pipefail
cd "$(dirname "$0")/.."

WINE=${WINE:-$(command -v wine64 || command -v wine || echo /usr/lib/wine/wine64)}
if [ ! -x "$WINE" ]; then
  echo "wine-test: no wine at $WINE (set WINE to a wine64 binary)" >&2
  exit 2
fi
WINESERVER=${WINESERVER:-$(dirname "$WINE")/wineserver}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/toolsd-wine.XXXXXX")
export WINEPREFIX=$tmp/prefix WINEDEBUG=-all WINEDLLOVERRIDES='mscoree,mshtml=;bcryptprimitives=n'
cleanup() {
  [ -x "$WINESERVER" ] && "$WINESERVER" -k 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
logs=${WINE_TEST_LOGS:-$tmp/logs}
mkdir -p "$tmp/bin" "$logs"

if [ $# -gt 0 ]; then
  pkgs=("$@")
else
  mapfile -t pkgs < <({ git ls-files '*_windows.go' '*_windows_test.go' | xargs -n1 dirname
    printf '%s\n' internal/fsopen internal/protect store; } | sort -u)
fi

echo "wine-test: $("$WINE" --version 2>/dev/null || echo wine), prefix $WINEPREFIX"
"$WINE" wineboot -i >/dev/null 2>&1 || true
"$WINESERVER" -w 2>/dev/null || true
go build -o "$tmp/winetool" ./internal/wine/winetool
"$tmp/winetool" dll "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"

failed=0
for p in "${pkgs[@]}"; do
  p=${p#./}
  name=$(echo "$p" | tr / _)
  exe=$tmp/bin/$name.test.exe log=$logs/$name.log
  if ! GOOS=windows GOARCH=amd64 go test -c -o "$exe" "./$p" >"$log" 2>&1; then
    printf '%-24s FAIL to build (%s)\n' "$p" "$log"; failed=1; continue
  fi
  if [ ! -e "$exe" ]; then
    printf '%-24s no tests\n' "$p"; continue
  fi
  # The package's folder is the tests' working folder, as with go test (wine's Z: drive).
  if line=$(set +o pipefail; (cd "$p" && timeout 900 "$WINE" "$exe" -test.v=test2json -test.count=1 -test.timeout=800s 2>&1) |
    tee -a "$log" | go tool test2json -p "$p" | "$tmp/winetool" verdict); then
    printf '%-24s %s\n' "$p" "$line"
  else
    printf '%-24s %s (%s)\n' "$p" "$line" "$log"; failed=1
  fi
done
exit $failed
