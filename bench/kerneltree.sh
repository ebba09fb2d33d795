#!/usr/bin/env bash
# Unpacks Debian's linux-source-6.1 (Linux 6.1: about 78,000 files and 5,100 folders, 1.3 GB)
# into DIR, for the kernel-size benchmarks: bench/grep_vs_rg.sh DIR, BIGTREE=DIR
# bench/bigtree.sh (with GIT=1, which commits the tree to a git repository as bigtree.sh
# needs). Needs apt-get (Debian's archive), dpkg-deb and xz.
# Debian updates the package with its stable releases, so the tree (and grep's counts) can
# differ a little from run to run of this script: VERSION=6.1.172-1 asks for one version
# (if the archive still has it). The version fetched is printed.
# Usage: bench/kerneltree.sh [DIR]   (default /tmp/linux-source-6.1)
set -euo pipefail
DIR=${1:-/tmp/linux-source-6.1}
if [[ -e $DIR/Makefile ]]; then
	echo "$DIR is there" >&2
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pkg=linux-source-6.1${VERSION:+=$VERSION}
(cd "$tmp" && apt-get download "$pkg")
ls "$tmp"/linux-source-6.1_*.deb | sed 's|.*/||' >&2
dpkg-deb --fsys-tarfile "$tmp"/linux-source-6.1_*.deb | tar -x -C "$tmp" ./usr/src/linux-source-6.1.tar.xz
tar -xJf "$tmp/usr/src/linux-source-6.1.tar.xz" -C "$tmp"
mkdir -p "$(dirname "$DIR")"
mv "$tmp/linux-source-6.1" "$DIR"
# Debian's packaging repository holds only debian/, so the package's root .gitignore ends
# with "/*" and "!/debian/", which would ignore the whole kernel: take them out.
sed -i '/^\/\*$/d; /^!\/debian\/$/d' "$DIR/.gitignore"
if [[ -n ${GIT:-} ]]; then
	git -C "$DIR" init -q
	git -C "$DIR" add -A
	git -C "$DIR" -c user.email=b@b -c user.name=b commit -qm linux-source-6.1
fi
echo "$DIR"
