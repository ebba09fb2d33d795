#!/usr/bin/env bash
# Times toolsd's built-in grep and glob against ripgrep on a source tree, side by side, with
# ratios and match counts; then read of the last 100 lines of a 1 GiB file against tail, and
# edit of a 10 MiB file against sed -i.
# Usage: bench/grep_vs_rg.sh [root] [runs]   (NO_BIG_FILES=1 skips read and edit)
#   root: default the Go source tree; bench/bigtree.sh's generated tree or Debian's
#   linux-source for issue 26's kernel-size bar (bench/README.md says how to get them).
#   CASES=go|c picks the queries (default: go when root holds Go files, else c); ONLY=REGEX
#   keeps the cases whose name matches (ONLY=glob).
# Target: grep and glob at most 1.2x ripgrep (issue 26), with the same matches.
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

# BEFORE=path: a grepbench built from an earlier commit, timed in the same rotation, for
# before/after figures (its column shows its median and its ratio to ripgrep's).
BEFORE=${BEFORE:-}

# measure: runs the commands in the arrays OURS, PEER and (with BEFORE) OLD once unmeasured,
# then $RUNS times each, interleaved (the order rotates every run, so every side runs under
# the same load of the moment), and prints one line per side: wall ms median, min and max,
# and the median CPU ms (user + system).
measure() {
	local sides=(OURS PEER) out=$TMP/times i r k
	[ -n "$BEFORE" ] && sides+=(OLD)
	: >"$out"
	for s in "${sides[@]}"; do
		local -n c=$s
		"${c[@]}" >/dev/null 2>&1 || true
		unset -n c
	done
	local TIMEFORMAT='%R %U %S'
	for r in $(seq "$RUNS"); do
		for ((k = 0; k < ${#sides[@]}; k++)); do
			i=$(((k + r) % ${#sides[@]}))
			local -n c=${sides[$i]}
			{ time "${c[@]}" >/dev/null 2>&1 || true; } 2>&1 | sed "s/^/${sides[$i]} /" >>"$out"
			unset -n c
		done
	done
	for s in "${sides[@]}"; do
		local wall cpu
		wall=$(awk -v s="$s" '$1 == s {print $2 * 1000}' "$out" | sort -n | awk '{a[NR]=$1} END{printf "%.1f %.1f %.1f", a[int((NR+1)/2)], a[1], a[NR]}')
		cpu=$(awk -v s="$s" '$1 == s {print ($3 + $4) * 1000}' "$out" | sort -n | awk '{a[NR]=$1} END{printf "%.1f", a[int((NR+1)/2)]}')
		echo "$wall $cpu"
	done
}

# rg flags that match toolsd's walk: hidden files searched, .git skipped, .gitignore and
# .ignore respected even outside a git repository, symlinks not followed.
RG=(rg --hidden --no-require-git -g '!.git' --no-messages)

rg_count() { "${RG[@]}" -c "$@" | awk -F: '{s+=$NF} END{print s+0}'; }

echo "$RUNS runs of each side, interleaved. Wall ms: median (min-max). ratio: of the wall medians to the peer's (rg; tail, sed -i for read, edit). CPU: of the median user+system times."
hdr=$(printf '%-36s %24s %24s %7s %6s' "case" "toolsd ms" "peer ms" "ratio" "CPU")
[ -n "$BEFORE" ] && hdr+=$(printf ' %24s %7s %6s' "before ms" "ratio" "CPU")
printf '%s %9s %9s\n' "$hdr" "toolsd n" "peer n"

# row NAME N_OURS N_PEER: prints measure's figures (read from stdin) and the match counts.
row() {
	local name=$1 n1=$2 n2=$3 op omin omax oc tp tmin tmax tc bp bmin bmax bc
	read -r op omin omax oc
	read -r tp tmin tmax tc
	local line
	line=$(printf '%-36s %24s %24s %7s %6s' "$name" "$op ($omin-$omax)" "$tp ($tmin-$tmax)" \
		"$(awk -v a="$op" -v b="$tp" 'BEGIN{printf "%.2fx", a/b}')" "$(awk -v a="$oc" -v b="$tc" 'BEGIN{if (b > 0) printf "%.2fx", a/b; else print "-"}')")
	if [ -n "$BEFORE" ]; then
		read -r bp bmin bmax bc
		line+=$(printf ' %24s %7s %6s' "$bp ($bmin-$bmax)" \
			"$(awk -v a="$bp" -v b="$tp" 'BEGIN{printf "%.2fx", a/b}')" "$(awk -v a="$bc" -v b="$tc" 'BEGIN{if (b > 0) printf "%.2fx", a/b; else print "-"}')")
	fi
	[ "$n1" = "$n2" ] || n2+="  MISMATCH"
	printf '%s %9s %9s\n' "$line" "$n1" "$n2"
}

# grep_case NAME PATTERN [INCLUDE [RG_PATTERN]]: RG_PATTERN is the same regex in ripgrep's
# syntax where it differs (Go's \b is ASCII, ripgrep's Unicode: (?-u:\b) is Go's).
# only NAME: whether ONLY lets the case run.
only() { [[ -z ${ONLY:-} || $1 =~ $ONLY ]]; }

grep_case() {
	local name=$1 pat=$2 inc=${3:-} rpat=${4:-$2}
	only "grep $name" || return 0
	local incflag=() rginc=()
	if [ -n "$inc" ]; then incflag=(-include "$inc"); rginc=(-g "$inc"); fi
	OURS=("$BIN" -mode grep -root "$ROOT" -pattern "$pat" "${incflag[@]}")
	OLD=("$BEFORE" -mode grep -root "$ROOT" -pattern "$pat" "${incflag[@]}")
	PEER=("${RG[@]}" -n -e "$rpat" "${rginc[@]}" "$ROOT")
	measure | row "grep $name" "$("${OURS[@]}")" "$(rg_count -e "$rpat" "${rginc[@]}" "$ROOT")"
}

glob_case() {
	local name=$1 pat=$2
	only "glob $name" || return 0
	OURS=("$BIN" -mode glob -root "$ROOT" -pattern "$pat")
	OLD=("$BEFORE" -mode glob -root "$ROOT" -pattern "$pat")
	PEER=("${RG[@]}" --files -g "$pat" "$ROOT")
	measure | row "glob $name" "$("${OURS[@]}")" "$("${PEER[@]}" | wc -l)"
}

if [ -z "${CASES:-}" ]; then
	CASES=c
	if [ -n "$(find "$ROOT" -maxdepth 3 -name '*.go' -print -quit)" ]; then CASES=go; fi
fi
# A glob given to rg with -g also re-includes files the ignore files leave out (an override),
# so the glob cases match no ignored file: there the two agree.
if [ "$CASES" = go ]; then
	grep_case "literal 'func ('" 'func \('
	grep_case "regex errors.New(\"[a-z]+ closed" 'errors\.New\("[a-z]+ closed'
	grep_case "word \\bReadFull\\b" '\bReadFull\b' '' '(?-u:\b)ReadFull(?-u:\b)'
	grep_case "no literal [A-Z]{12}" '[A-Z]{12}'
	grep_case "case-insensitive (?i)readfull" '(?i)readfull'
	grep_case "include *_test.go" 't\.Fatalf' '*_test.go'
	glob_case "*.go" '*.go'
	glob_case "**/testdata/**" '**/testdata/**'
else
	grep_case "literal EXPORT_SYMBOL_GPL" 'EXPORT_SYMBOL_GPL'
	grep_case "regex spin_lock(&[a-z_]+->lock)" 'spin_lock\(&[a-z_]+->lock\)'
	grep_case "word \\bkmalloc\\b" '\bkmalloc\b' '' '(?-u:\b)kmalloc(?-u:\b)'
	grep_case "no literal [A-Z]{12}" '[A-Z]{12}'
	grep_case "case-insensitive (?i)mutex_lock" '(?i)mutex_lock'
	grep_case "include *.h" '#define [A-Z_]+_H\b' '*.h' '#define [A-Z_]+_H(?-u:\b)'
	glob_case "*.c" '*.c'
	glob_case "**/include/**/*.h" '**/include/**/*.h'
fi

# The same tree with a typical 40-line .gitignore at its root: every entry is checked
# against every pattern, which is where a slow ignore matcher shows. (A tree with its own
# .gitignore, such as the kernel's, already shows it.)
if [ -e "$ROOT/.gitignore" ]; then SKIP_IGNORE_COPY=1; fi
if [ -z "${SKIP_IGNORE_COPY:-}" ]; then
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
if [ "$CASES" = go ]; then
	grep_case "literal, 40-line .gitignore" 'func \('
	glob_case "*.go, 40-line .gitignore" '*.go'
else
	grep_case "literal, 40-line .gitignore" 'EXPORT_SYMBOL_GPL'
	glob_case "*.c, 40-line .gitignore" '*.c'
fi
rm -rf "$IGN"
fi

[ -n "${NO_BIG_FILES:-}" ] && exit 0

# read: the last 100 lines of a 1 GiB file. toolsd's first read of a file counts its lines
# in one pass (and leaves a line index); later reads of the same version jump there.
BIG=$TMP/big
mkdir -p "$BIG"
"$BIN" -mode gen -root "$BIG" -file big.log -size $((1 << 30)) >/dev/null
TOTAL=$(wc -l <"$BIG/big.log")
OFF=$((TOTAL - 99))
BEFORE=
OURS=("$BIN" -mode read -root "$BIG" -file big.log -offset "$OFF" -lines 100)
PEER=(tail -n 100 "$BIG/big.log")
measure | row "read last 100 of 1 GiB (vs tail)" "$("${OURS[@]}")" "$("${PEER[@]}" | wc -l)"
indexed=$("$BIN" -mode read -root "$BIG" -file big.log -offset "$OFF" -lines 100 -repeat 5 2>&1 >/dev/null | tail -1 | awk '{print $3}')
echo "read last 100 of 1 GiB (indexed, in process): $indexed ms"
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
OURS=(flip)
PEER=(sflip)
measure | row "edit one line of 10 MiB (vs sed -i)" 1 1
