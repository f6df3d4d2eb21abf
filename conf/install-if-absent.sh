#!/bin/sh
# A meson install script for files an administrator edits (the cluster configuration, the
# /etc/default files): install SOURCE as DIR/NAME when there is no DIR/NAME yet; when
# there is one, keep it and install SOURCE beside it as DIR/NAME.dist, and say so (unless
# it is the same as SOURCE: nothing to do then).
# $DESTDIR (meson install --destdir) is put in front of DIR.
# Usage: install-if-absent.sh SOURCE DIR NAME MODE
set -eu
[ $# -eq 4 ] || { echo "usage: $0 SOURCE DIR NAME MODE" >&2; exit 2; }
src=$1 dir=$2 name=$3 mode=$4
dest=${DESTDIR:-}$dir
if [ -n "${MESON_INSTALL_DRY_RUN:-}" ]; then
	echo "Would install $src to $dir/$name (or $name.dist beside an existing one)"
	exit 0
fi
# Meson before 1.1 keeps an install script's output to itself unless the script fails:
# say it on meson's own stdout as well when that is a terminal or a pipe (a file would
# be overwritten by meson's buffered writes at its own offset).
say() {
	echo "$*"
	p=/proc/$PPID/fd/1
	if { [ -c "$p" ] || [ -p "$p" ]; } && [ -w "$p" ] && ! [ "/proc/$$/fd/1" -ef "$p" ]; then
		echo "$*" >>"$p" || :
	fi
}
mkdir -p "$dest"
if [ -f "$dest/$name" ] && cmp -s "$src" "$dest/$name"; then
	# unchanged since the last install: no .dist to compare with
	[ -n "${MESON_INSTALL_QUIET:-}" ] || say "Up-to-date: $dir/$name"
elif [ -e "$dest/$name" ] || [ -L "$dest/$name" ]; then
	install -m "$mode" "$src" "$dest/$name.dist"
	say "Kept $dir/$name (it exists; it may hold your changes); installed the new" \
		"version as $dir/$name.dist: compare them with diff"
else
	install -m "$mode" "$src" "$dest/$name"
	[ -n "${MESON_INSTALL_QUIET:-}" ] || say "Installing $src to $dir/$name"
fi
