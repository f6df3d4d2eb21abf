#!/bin/bash
# `meson install` into a DESTDIR: the three programs run, the default configuration
# loads (the installed daemon mounts with it), the systemd units verify, the /etc/default
# files are there, a second install keeps an edited configuration, and the daemon's log
# lines carry syslog priorities on the journal. Man pages are checked when installed.
# Usage: test_install.sh BUILDDIR BINDIR SYSCONFDIR UNITDIR MANDIR
#   (the absolute install paths as configured; UNITDIR "no": no units)
set -u
build=$1 bindir=$2 sysconfdir=$3 unitdir=$4 mandir=$5
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
it_setup
dest=$IT_WORK/dest

install_out=$(meson install -C "$build" --destdir "$dest" --no-rebuild 2>&1)
check_eq "meson install --destdir exits 0" 0 "$?"

for prog in ascendfs ascend-agent ascend-run ascend-sim; do
	check_contains "$bindir/$prog --version runs" "$prog " "$("$dest$bindir/$prog" --version 2>&1)"
done
config=$dest$sysconfdir/ascendfs/cluster.yaml
check "the configuration is installed as $sysconfdir/ascendfs/cluster.yaml" test -s "$config"
check_contains "ascendfs --help names the default configuration" \
	"default $sysconfdir/ascendfs/cluster.yaml" "$("$dest$bindir/ascendfs" --help 2>&1)"
if [ ! -e "$sysconfdir/ascendfs/cluster.yaml" ]; then
	out=$("$dest$bindir/ascendfs" -f --state-dir=none "$IT_MNT" 2>&1)
	check_contains "without -c the daemon reads $sysconfdir/ascendfs/cluster.yaml" \
		"no -c was given, so the default configuration $sysconfdir/ascendfs/cluster.yaml was read" "$out"
fi
for f in ascendfs ascend-agent; do
	check "$sysconfdir/default/$f is installed" test -s "$dest$sysconfdir/default/$f"
	check "$sysconfdir/default/$f only has comments" \
		bash -c "! grep -qv '^#' '$dest$sysconfdir/default/$f'"
done

# The installed daemon mounts with the installed configuration; on the journal (its
# stderr's device and inode in JOURNAL_STREAM) lines start with the syslog priority.
: >"$IT_LOG"
stream=$(stat -c '%d:%i' "$IT_LOG")
if JOURNAL_STREAM=$stream it_start "$dest$bindir/ascendfs" "$config" --state-dir=none; then
	ok "the installed daemon mounts with the installed configuration"
	check_eq "16 servers from the example cluster" 16 "$(ls "$IT_MNT/nodes" | wc -l)"
	it_stop
	check "on the journal its lines start with <6>" grep -q '^<6>mounted ' "$IT_LOG"
	# the lines without a priority, shown when there are some
	check_eq "on the journal its lines have no time" "" "$(grep -vE '^<[0-7]>' "$IT_LOG")"
else
	not_ok "the installed daemon mounts with the installed configuration" "$(cat "$IT_LOG")"
fi
: >"$IT_LOG"
if it_start "$dest$bindir/ascendfs" "$config" --state-dir=none --log-level=error; then
	it_stop
	check_eq "--log-level error: no info lines" "" "$(grep ' info: ' "$IT_LOG")"
fi
: >"$IT_LOG"
if it_start "$dest$bindir/ascendfs" "$config" --state-dir=none; then
	it_stop
	check "off the journal its lines start with the time" \
		grep -qE '^[0-9T:-]+Z ascendfs info: mounted ' "$IT_LOG"
fi

# The units as installed, with the binaries' paths moved into the DESTDIR (systemd-analyze
# verify checks that each command exists and is executable).
if [ "$unitdir" = no ]; then
	ok "units not installed (-Dsystemdsystemunitdir=no) # SKIP"
elif ! command -v systemd-analyze >/dev/null; then
	ok "systemd-analyze verify # SKIP: systemd-analyze is missing (Debian package systemd)"
else
	mkdir -p "$IT_WORK/units"
	for u in ascendfs ascend-agent; do
		check "$unitdir/$u.service is installed" test -s "$dest$unitdir/$u.service"
		sed "s#$bindir/#$dest$bindir/#g" "$dest$unitdir/$u.service" >"$IT_WORK/units/$u.service"
	done
	out=$(systemd-analyze verify --man=no "$IT_WORK/units/ascendfs.service" \
		"$IT_WORK/units/ascend-agent.service" 2>&1)
	status=$?
	check_eq "systemd-analyze verify passes the units, silently" "0:" "$status:$out"
	check_contains "ascendfs.service runs the installed daemon" \
		"ExecStart=$bindir/ascendfs -f -c $sysconfdir/ascendfs/cluster.yaml --state-dir /var/lib/ascendfs \$ASCENDFS_OPTS /ascend" \
		"$(cat "$dest$unitdir/ascendfs.service")"
	check_contains "ascend-agent.service runs the installed agent" \
		"ExecStart=$bindir/ascend-agent --mount /ascend --node %l \$ASCEND_AGENT_OPTS" \
		"$(cat "$dest$unitdir/ascend-agent.service")"
	# a broken unit must fail: the check above really checks
	sed 's/^ExecStart=/ExecStart=nonexistent-/' "$IT_WORK/units/ascendfs.service" \
		>"$IT_WORK/units/broken.service"
	check_fails "systemd-analyze verify fails a unit whose program is missing" \
		systemd-analyze verify --man=no "$IT_WORK/units/broken.service"
fi

# A second install keeps what the administrator changed, puts the new version beside it
# and says so.
echo "# edited by the administrator" >>"$config"
echo 'ASCENDFS_OPTS="--log-level debug"' >>"$dest$sysconfdir/default/ascendfs"
before=$(cat "$config")
install_out=$(meson install -C "$build" --destdir "$dest" --no-rebuild 2>&1)
check_eq "a second meson install exits 0" 0 "$?"
check_eq "a second install keeps the edited configuration" "$before" "$(cat "$config")"
check "the new configuration goes beside it as cluster.yaml.dist" test -s "$config.dist"
check_contains "the install says it kept the configuration" \
	"Kept $sysconfdir/ascendfs/cluster.yaml" "$install_out"
check "a second install keeps the edited $sysconfdir/default/ascendfs" \
	grep -q '^ASCENDFS_OPTS="--log-level debug"' "$dest$sysconfdir/default/ascendfs"
check "... and puts the new one beside it" test -s "$dest$sysconfdir/default/ascendfs.dist"
check_fails "an unedited $sysconfdir/default/ascend-agent gets no .dist beside it" \
	test -e "$dest$sysconfdir/default/ascend-agent.dist"

# Man pages, each when installed.
for page in man8/ascendfs.8 man8/ascend-agent.8 man5/ascendfs-spec.5; do
	file=$dest$mandir/$page
	if [ ! -e "$file" ]; then
		ok "$mandir/$page # SKIP: not installed by this build"
	elif command -v mandoc >/dev/null; then
		check "$mandir/$page passes mandoc -Tlint" mandoc -Tlint -Wwarning "$file"
	elif command -v groff >/dev/null; then
		out=$(groff -man -ww -z "$file" 2>&1)
		check_eq "$mandir/$page formats without groff warnings" "" "$out"
	else
		check "$mandir/$page is not empty" test -s "$file"
	fi
done

it_finish
