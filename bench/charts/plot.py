#!/usr/bin/env python3
"""Draws the charts of BENCHMARKS.md's summary from the figures recorded in
BENCHMARKS.md itself (the tables of the sections they come from), so that a
chart cannot say something its section does not:

  end-to-end.png    events per CPU-second, enrichd and rsyslog, of the
                    three invocations of "End to end, in the peer harness:
                    2026-12-02, quiet"
  instructions.png  instructions per event of BenchmarkPipeline, before and
                    after, of "Instructions per event, 2026-12-02"

Run from the repository's root: python3 bench/charts/plot.py
Needs Debian's python3-matplotlib. Writes bench/charts/*.png (small PNGs).
"""
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "BENCHMARKS.md")


def section(text, title):
    """The text of the section whose heading is title, to the next heading."""
    m = re.search(r"^#+ " + re.escape(title) + r"\n(.*?)(?=^#+ )", text, re.S | re.M)
    if not m:
        sys.exit("BENCHMARKS.md has no section %r" % title)
    return m.group(1)


def table(body):
    """The rows of the first Markdown table in body, as lists of cells."""
    rows = []
    for line in body.splitlines():
        if line.startswith("|"):
            cells = [c.strip().strip("*`") for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):
                rows.append(cells)
        elif rows:
            break
    return rows


def num(s):
    return float(s.replace(",", "").rstrip("x"))


def main():
    text = open(BENCH, encoding="utf-8").read()
    plt.rcParams.update({"font.size": 9})

    t = table(section(text, "End to end, in the peer harness: 2026-12-02, quiet"))
    head, rows = t[0], t[1:]
    col = {h: i for i, h in enumerate(head)}
    names = [r[0] for r in rows]
    enrichd = [num(r[col["enrichd events/CPU-s"]]) / 1000 for r in rows]
    rsyslog = [num(r[col["rsyslog events/CPU-s"]]) / 1000 for r in rows]
    fig, ax = plt.subplots(figsize=(5, 2.6), dpi=100)
    x = range(len(names))
    ax.bar([i - 0.2 for i in x], enrichd, 0.4, label="enrichd")
    ax.bar([i + 0.2 for i in x], rsyslog, 0.4, label="rsyslog")
    ax.set_xticks(list(x), ["run " + n for n in names])
    ax.set_ylabel("thousand events per CPU-second")
    ax.set_title("End to end, peer harness, 2026-12-02 (BENCHMARKS.md)")
    ax.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "end-to-end.png"))

    t = table(section(text, "Instructions per event, 2026-12-02"))
    head, rows = t[0], t[1:]
    fig, ax = plt.subplots(figsize=(5, 2.4), dpi=100)
    labels = [r[0].replace("BenchmarkPipeline/", "") for r in rows]
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [num(r[1]) for r in rows], 0.4, label=head[1])
    ax.bar([i + 0.2 for i in x], [num(r[2]) for r in rows], 0.4, label=head[2])
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("instructions per event")
    ax.set_title("enrichd pipeline, valgrind, 2026-12-02 (BENCHMARKS.md)")
    ax.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "instructions.png"))


if __name__ == "__main__":
    main()
