#!/usr/bin/env bash
# Install the Debian packages ascendfs needs to build, test and run (a fresh Debian 12
# machine has none of them). Installs only what is missing; needs root or sudo.
# `--list` prints the package names instead.
set -euo pipefail

PACKAGES=(
	gcc libc6-dev pkg-config meson ninja-build # build
	libfuse3-dev fuse3                         # FUSE library and fusermount3
	libyaml-dev libjansson-dev                 # YAML and JSON
	libsqlite3-dev                             # durable state
	libmicrohttpd-dev                          # --http: /metrics and the files' API
	libcurl4-openssl-dev                       # the etcd client (state: {backend: etcd})
	etcd-server etcd-client                    # a real etcd cluster in the tests
	prometheus                                 # integration_http: a real scrape and PromQL
	chromium fonts-dejavu-core                 # integration_panel: the panel in a real browser
	libcmocka-dev python3 util-linux           # unit tests; JSON checks and setpriv in tests
	inotify-tools                              # inotifywait, for people watching the mount
	gnuplot-nox                                # ascend-sim's figures
	iproute2 openssh-server openssh-client sshfs # remote access, and the netns cluster test
	systemd                                    # systemd-analyze verify of the units
	mandoc                                     # man_lint: mandoc -Tlint of the man pages
	faketime                                   # integration_clock: clock steps across a restart
)

if [ "${1:-}" = "--list" ]; then
	printf '%s\n' "${PACKAGES[@]}"
	exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: run as root to install: ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
