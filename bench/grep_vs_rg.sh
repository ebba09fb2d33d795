#!/usr/bin/env bash
# Times toolsd's built-in grep and glob against ripgrep on the Go source tree, side by
# side, with ratios and match counts; then read of the last 100 lines of a 1 GiB file
# against tail, and edit of a 10 MiB file against sed -i.
# Usage: bench/grep_vs_rg.sh [root] [runs]   (NO_BIG_FILES=1 skips read and edit)
# Target: grep and glob no slower than 1.5x ripgrep, with the same matches.
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT=${1:-$(go env GOROOT)/src}
RUNS=${2:-7}

if ! command -v rg >/dev/null; then
	echo "installing ripgrep from Debian..." >&2
	(apt-get install -y ripgrep >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y ripgrep >/dev/null; })
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BIN=$TMP/grepbench
go build -o "$BIN" ./bench/cmd/grepbench

# median_ms CMD...: runs CMD $RUNS times (after one warm-up) and prints the fastest wall
# time in milliseconds: on a shared machine the minimum is the least disturbed by others'
# load, and both sides are measured the same way. (MEDIAN=1 prints the median instead.)
median_ms() {
	"$@" >/dev/null 2>&1 || true
	local times=()
	for _ in $(seq "$RUNS"); do
		local s e
		s=$(date +%s%N)
		"$@" >/dev/null 2>&1 || true
		e=$(date +%s%N)
		times+=($(((e - s) / 1000)))
	done
	printf '%s\n' "${times[@]}" | sort -n | awk -v med="${MEDIAN:-}" '{a[NR]=$1} END{i = med ? int((NR+1)/2) : 1; printf "%.1f", a[i]/1000}'
}

# rg flags that match toolsd's walk: hidden files searched, .git skipped, .gitignore and
# .ignore respected even outside a git repository, symlinks not followed.
RG=(rg --hidden --no-require-git -g '!.git' --no-messages)

rg_count() { "${RG[@]}" -c "$@" | awk -F: '{s+=$NF} END{print s+0}'; }

printf '%-34s %10s %10s %7s %10s %10s\n' "case" "toolsd ms" "peer ms" "ratio" "toolsd n" "peer n"
row() {
	local name=$1 ours=$2 theirs=$3 n1=$4 n2=$5
	local ratio
	ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN{printf "%.2f", a/b}')
	printf '%-34s %10s %10s %7s %10s %10s\n' "$name" "$ours" "$theirs" "${ratio}x" "$n1" "$n2"
}

grep_case() {
	local name=$1 pat=$2 inc=${3:-}
	local ours theirs n1 n2 incflag=() rginc=()
	if [ -n "$inc" ]; then incflag=(-include "$inc"); rginc=(-g "$inc"); fi
	ours=$(median_ms "$BIN" -mode grep -root "$ROOT" -pattern "$pat" "${incflag[@]}")
	theirs=$(median_ms "${RG[@]}" -n -e "$pat" "${rginc[@]}" "$ROOT")
	n1=$("$BIN" -mode grep -root "$ROOT" -pattern "$pat" "${incflag[@]}")
	n2=$(rg_count -e "$pat" "${rginc[@]}" "$ROOT")
	row "grep $name" "$ours" "$theirs" "$n1" "$n2"
}

glob_case() {
	local name=$1 pat=$2
	local ours theirs n1 n2
	ours=$(median_ms "$BIN" -mode glob -root "$ROOT" -pattern "$pat")
	theirs=$(median_ms "${RG[@]}" --files -g "$pat" "$ROOT")
	n1=$("$BIN" -mode glob -root "$ROOT" -pattern "$pat")
	n2=$("${RG[@]}" --files -g "$pat" "$ROOT" | wc -l)
	row "glob $name" "$ours" "$theirs" "$n1" "$n2"
}

grep_case "literal 'func ('" 'func \('
grep_case "regex errors.New(\"[a-z]+ closed" 'errors\.New\("[a-z]+ closed'
grep_case "word \\bReadFull\\b" '\bReadFull\b'
grep_case "no literal [A-Z]{12}" '[A-Z]{12}'
grep_case "include *_test.go" 't\.Fatalf' '*_test.go'
glob_case "*.go" '*.go'
glob_case "**/testdata/**" '**/testdata/**'

# The same tree with a typical 40-line .gitignore at its root: every entry is checked
# against every pattern, which is where a slow ignore matcher shows.
IGN=$TMP/ignored
cp -r "$ROOT" "$IGN"
cat >"$IGN/.gitignore" <<'IGNORE'
node_modules/
dist/
build/
*.log
*.tmp
.DS_Store
coverage/
*.swp
*.pyc
__pycache__/
.env
.env.local
*.o
*.a
*.so
/bin/
/pkg/
.idea/
.vscode/
*.orig
*.rej
*.bak
tmp/
out/
target/
vendor/bundle/
*.class
*.jar
npm-debug.log*
yarn-error.log
.cache/
*.pid
*.seed
*.gz
*.zip
docs/_build/
.terraform/
*.tfstate
**/generated/**
IGNORE
ROOT=$IGN
grep_case "literal, 40-line .gitignore" 'func \('
glob_case "*.go, 40-line .gitignore" '*.go'

[ -n "${NO_BIG_FILES:-}" ] && exit 0

# read: the last 100 lines of a 1 GiB file. toolsd's first read of a file counts its lines
# in one pass (and leaves a line index); later reads of the same version jump there.
BIG=$TMP/big
mkdir -p "$BIG"
"$BIN" -mode gen -root "$BIG" -file big.log -size $((1 << 30)) >/dev/null
TOTAL=$(wc -l <"$BIG/big.log")
OFF=$((TOTAL - 99))
ours=$(median_ms "$BIN" -mode read -root "$BIG" -file big.log -offset "$OFF" -lines 100)
theirs=$(median_ms tail -n 100 "$BIG/big.log")
n1=$("$BIN" -mode read -root "$BIG" -file big.log -offset "$OFF" -lines 100)
row "read last 100 of 1 GiB (first)" "$ours" "$theirs" "$n1" "$(tail -n 100 "$BIG/big.log" | wc -l)"
indexed=$("$BIN" -mode read -root "$BIG" -file big.log -offset "$OFF" -lines 100 -repeat 5 2>&1 >/dev/null | tail -1 | awk '{print $3}')
row "read last 100 of 1 GiB (indexed)" "$indexed" "$theirs" 100 100
rm -f "$BIG/big.log"

# edit: one unique line in the middle of a 10 MiB file (toolsd also diffs and fsyncs).
"$BIN" -mode gen -root "$BIG" -file ten.log -size $((10 << 20)) >/dev/null
MID=$(sed -n "$(($(wc -l <"$BIG/ten.log") / 2))p" "$BIG/ten.log" | cut -c1-30)
flip() { # alternate the edit so every run changes the file
	if grep -q "^${MID}" "$BIG/ten.log"; then
		"$BIN" -mode edit -root "$BIG" -file ten.log -old "$MID" -new "X${MID}"
	else
		"$BIN" -mode edit -root "$BIG" -file ten.log -old "X${MID}" -new "$MID"
	fi
}
sflip() {
	if grep -q "^${MID}" "$BIG/ten.log"; then sed -i "s/^${MID}/X${MID}/" "$BIG/ten.log"; else sed -i "s/^X${MID}/${MID}/" "$BIG/ten.log"; fi
}
ours=$(median_ms flip)
theirs=$(median_ms sflip)
row "edit one line of 10 MiB (vs sed -i)" "$ours" "$theirs" 1 1
