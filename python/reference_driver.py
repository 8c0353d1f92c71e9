#!/usr/bin/env python3
"""The in-memory reference driver, as a storesim driver process:

    storesim certify --driver 'exec:python3 python/reference_driver.py'

Flags: --latency-ms N (default 20: how long each call waits before its
transfer), --max-rows N (default 16), --absent-is-fault (declare
AbsentIsMiss=false).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from storesim_driver import serve  # noqa: E402
from storesim_driver.reference import MemoryDriver  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--latency-ms", type=float, default=20.0)
    p.add_argument("--max-rows", type=int, default=16)
    p.add_argument("--absent-is-fault", action="store_true")
    a = p.parse_args()
    serve(MemoryDriver(latency=a.latency_ms / 1000.0, max_rows=a.max_rows, absent_is_miss=not a.absent_is_fault))


if __name__ == "__main__":
    main()
