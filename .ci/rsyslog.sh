#!/usr/bin/env bash
# Fetches rsyslog for the syslog interop tests (interop/syslog) into the
# git-ignored cache .cache/rsyslog/. rsyslog conflicts with syslog-ng-core
# as a Debian package, so it is not installed: `apt-get download` fetches
# the .debs of the candidate version (no root needed) and `dpkg-deb -x`
# unpacks them. The tests run
#   .cache/rsyslog/root/usr/sbin/rsyslogd -n -f CONF \
#       -M .cache/rsyslog/root/usr/lib/x86_64-linux-gnu/rsyslog -i PIDFILE
# ($LUTKIT_RSYSLOGD names another rsyslogd). Its runtime libraries
# (libestr0, libfastjson4, liblognorm5, libgnutls30, librelp0 for omrelp
# and imrelp) are Debian packages
# listed in .ci/apt-packages. A second run downloads nothing when the
# unpacked version is the candidate one.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=.cache/rsyslog
pkgs=(rsyslog rsyslog-gnutls rsyslog-relp)

if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
  echo "rsyslog.sh: apt-get and dpkg-deb are needed to fetch rsyslog (Debian or Ubuntu)" >&2
  exit 1
fi

# The version apt would install, to tell whether the cache is current.
want=$(apt-cache policy rsyslog | sed -n 's/^ *Candidate: *//p')
if { [ -z "$want" ] || [ "$want" = "(none)" ]; } && [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  want=$(apt-cache policy rsyslog | sed -n 's/^ *Candidate: *//p')
fi
if [ -z "$want" ] || [ "$want" = "(none)" ]; then
  echo "rsyslog.sh: apt knows no rsyslog package; run apt-get update" >&2
  exit 1
fi
if [ -x "$cache/root/usr/sbin/rsyslogd" ] && [ -e "$cache/root/usr/lib/x86_64-linux-gnu/rsyslog/omrelp.so" ] && [ "$(cat "$cache/version" 2>/dev/null)" = "$want" ]; then
  exit 0
fi

mkdir -p "$cache/debs"
rm -rf "$cache/root" "$cache/debs"/*.deb
# apt-get download writes into the working directory.
sandbox=(); [ "$(id -u)" = 0 ] && sandbox=(-o APT::Sandbox::User=root)
(cd "$cache/debs" && apt-get download -q "${sandbox[@]}" "${pkgs[@]}")
mkdir -p "$cache/root"
for deb in "$cache/debs"/*.deb; do
  dpkg-deb -x "$deb" "$cache/root"
done
"$cache/root/usr/sbin/rsyslogd" -v | head -n 1
echo "$want" >"$cache/version"
