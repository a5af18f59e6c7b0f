#!/bin/sh
# Installs the peers of the benchmark from Debian packages (as root, when
# some are missing) and fetches rsyslog into the git-ignored .cache/rsyslog/.
# rsyslog and syslog-ng-core conflict as Debian packages (both provide
# system-log-daemon), so syslog-ng is installed normally and the rsyslog
# .deb is only unpacked (apt-get download, dpkg-deb -x; its libraries come
# from apt) and run with -M pointing at its module directory. No service is
# started: the harness starts each daemon itself on 127.0.0.1.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export DEBIAN_FRONTEND=noninteractive

need="syslog-ng-core syslog-ng-mod-add-contextual-data syslog-ng-mod-geoip2 memcached sqlite3 mmdb-bin libestr0 libfastjson4 liblognorm5 libgnutls30 libzstd1 libuuid1"
missing=""
for p in $need; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install.sh: missing Debian packages:$missing; run as root to install them" >&2
    exit 1
  fi
  # Keep package scripts from starting system daemons while installing.
  rcd_added=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    rcd_added=1
  fi
  apt-get update -q
  apt-get install -y -q --no-install-recommends $missing
  if [ -n "$rcd_added" ]; then rm -f /usr/sbin/policy-rc.d; fi
fi

# rsyslog, unpacked into .cache/rsyslog/root by the script the syslog
# interop tests use (apt-get download, dpkg-deb -x).
cache="$ROOT/.cache/rsyslog"
"$ROOT/.ci/rsyslog.sh"
"$cache/root/usr/sbin/rsyslogd" -v | head -n 1
if ls "$cache/root/usr/lib/x86_64-linux-gnu/rsyslog/" | grep -qi mmdb; then
  echo "rsyslog: mmdblookup module present"
else
  echo "rsyslog: no mmdblookup module in Debian's package (and no rsyslog-mmdb* package): no MMDB run for rsyslog"
fi
