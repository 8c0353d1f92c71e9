#!/usr/bin/env python3
"""A broken Python driver, as a storesim driver process:

    storesim certify --driver 'exec:python3 python/broken_driver.py LateWriteAfterEnded'

NAME is one of storesim_driver.broken.BROKEN (a planted contract fault,
which certification must fail on its rule) or FAULTY (a process that breaks
the protocol after --after N requests: Garbage, Hang, Die, Flood; with
--once PATH only the first process that creates PATH does).
--list prints them.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from storesim_driver import serve  # noqa: E402
from storesim_driver.broken import BROKEN, FAULTY  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", nargs="?")
    p.add_argument("--list", action="store_true")
    p.add_argument("--latency-ms", type=float, default=20.0)
    p.add_argument("--after", type=int, default=20)
    p.add_argument("--once", help="FAULTY only: misbehave only in the first process that creates this file")
    a = p.parse_args()
    if a.list or not a.name:
        for n, (_, rule, what) in sorted(BROKEN.items()):
            print("%-22s %-14s %s" % (n, rule, what))
        for n in sorted(FAULTY):
            print("%-22s %-14s %s" % (n, "protocol", "breaks the protocol after --after requests"))
        return
    lat = a.latency_ms / 1000.0
    if a.name in BROKEN:
        serve(BROKEN[a.name][0](latency=lat))
    elif a.name in FAULTY:
        serve(FAULTY[a.name](after=a.after, once=a.once, latency=lat))
    else:
        sys.exit("unknown broken driver %r (see --list)" % a.name)


if __name__ == "__main__":
    main()
