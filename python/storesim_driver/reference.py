"""The in-memory reference driver: a store of its own (a dict, private to the
process), every rule of the driver contract (docs/SPEC.md §2) kept, the
region memory really shared with the caller (mmap of the file the parent
maps). It certifies: storesim certify --driver 'exec:python3
python/reference_driver.py'.

How it decides (choices, not rules, as in drivers/memdriver):

  * The store is a dict, or — when hello names a scratch directory, which
    every process of one run shares — a directory (DirStore).
  * Calls run on one worker thread, in start order, each after `latency`
    seconds (default 20 ms: a call is in flight long enough that the suite's
    race pairs, cancel or unregister or shutdown against a call in flight,
    really happen).
  * PUBLISH copies every slot first, then ends access (ENDED), then stores
    each row: absent keys are stored (OK), present keys keep the first
    object (OK: first writer wins, D-SUB-4).
  * FETCH writes each object of exactly the slot's size into its slot, then
    reports the row OK; an absent key is MISS (slot untouched); an object of
    another size is FAULT (slot untouched).
  * Cancel of a call that has not run yet ends it at once: every row
    NOT_ATTEMPTED, access ENDED (the worker will never start it). A call
    already running completes (it holds the lock for its whole transfer).
  * Shutdown cancels what has not run and waits for the rest up to its
    timeout; whatever is still running is labelled call:<id>:unprovable and
    its regions region:<label>:retained.
"""

import hashlib
import heapq
import itertools
import os
import threading
import time

from .adapter import (
    ACCESS_PENDING, BAD_GEOMETRY, BUSY, CLOSED, ENDED, FAULT, IN_DOUBT, INVALID, LOOKUP_FAILED, MISS,
    NOT_ATTEMPTED, OK, PENDING, REFUSED, UNPROVABLE, Driver, DriverError,
)


class DirStore:
    """The store in a directory, shared by every process of a run (hello's
    scratch): one file per key, named by its hash. A put writes a private
    file and links it into place, which fails if the key is there: first
    writer wins (D-SUB-4) and an object is visible whole or not at all
    (D-SUB-5)."""

    _n = itertools.count()

    def __init__(self, root):
        self.root = os.path.join(root, "store")
        os.makedirs(self.root, exist_ok=True)

    def _path(self, key):
        return os.path.join(self.root, hashlib.sha256(key.encode()).hexdigest())

    def get(self, key):
        try:
            with open(self._path(key), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def __contains__(self, key):
        return os.path.exists(self._path(key))

    def setdefault(self, key, val):
        path = self._path(key)
        tmp = "%s.tmp-%d-%d" % (path, os.getpid(), next(self._n))
        with open(tmp, "wb") as f:
            f.write(val)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)

    def pop(self, key, default=None):
        try:
            os.unlink(self._path(key))
        except FileNotFoundError:
            pass
        return default

    def clear(self):
        for name in os.listdir(self.root):
            self.pop_file(name)

    def pop_file(self, name):
        try:
            os.unlink(os.path.join(self.root, name))
        except FileNotFoundError:
            pass


class MemoryDriver(Driver):
    name = "python-reference"
    together = True
    ops = ("delete", "flush", "live")

    def __init__(self, latency=0.020, max_rows=16, absent_is_miss=True):
        self.latency = latency
        self.max_rows = max_rows
        self.absent_is_miss = absent_is_miss
        self.store = {}
        self.regions = {}  # handle -> Region
        self.next_handle = 0
        self.calls = {}  # id -> Call, until settled
        self.queue = []  # (due, seq, call)
        self.seq = 0
        self.running = None  # the call the worker is transferring
        self.draining = False
        self.stopping = False
        self.quit = False
        self.worker = None

    # --- declaration -------------------------------------------------------

    def hello(self, prefix, caps, scratch=""):
        if scratch:
            self.store = DirStore(scratch)  # shared with the run's other processes
        if caps:
            if caps.get("max_rows", 0) >= 1:
                self.max_rows = caps["max_rows"]
            self.absent_is_miss = bool(caps.get("absent_is_miss", self.absent_is_miss))
        self.worker = threading.Thread(target=self._work, name="worker", daemon=True)
        self.worker.start()
        return {"max_rows": self.max_rows, "absent_is_miss": self.absent_is_miss,
                "fetch": True, "publish": True, "cancel": True}

    # --- registration ------------------------------------------------------

    def _check_new(self, r, others):
        if self.stopping:
            raise DriverError(REFUSED, "region %r: D-REG-5: the driver is shutting down" % r.label)
        err = r.geometry_error()
        if err:
            raise DriverError(BAD_GEOMETRY, "D-REG-1: " + err)
        for o in others:
            if o.label == r.label:
                raise DriverError(BAD_GEOMETRY, "D-REG-1: region %r: label already registered" % r.label)
            if r.overlaps(o):
                raise DriverError(REFUSED, "D-REG-1: region %r overlaps region %r" % (r.label, o.label))

    def register(self, region):
        self._check_new(region, list(self.regions.values()))
        region.open()
        self.next_handle += 1
        self.regions[self.next_handle] = region
        return self.next_handle

    def register_together(self, regions):
        if not regions:
            raise DriverError(INVALID, "no regions")
        # D-GEOM within the set (a repeated label, shared memory), then
        # D-REG-1 against what is live.
        for i, r in enumerate(regions):
            err = r.geometry_error()
            if err:
                raise DriverError(BAD_GEOMETRY, "D-GEOM: " + err)
            for o in regions[:i]:
                if o.label == r.label:
                    raise DriverError(BAD_GEOMETRY, "D-GEOM: label %r used twice" % r.label)
                if r.overlaps(o):
                    raise DriverError(BAD_GEOMETRY, "D-GEOM: region %r shares memory with region %r" % (r.label, o.label))
        live = list(self.regions.values())
        for r in regions:
            self._check_new(r, live)
        for i, r in enumerate(regions):
            try:
                r.open()
            except DriverError:
                for o in regions[:i]:
                    o.close()
                raise
        handles = []
        for r in regions:
            self.next_handle += 1
            self.regions[self.next_handle] = r
            handles.append(self.next_handle)
        return handles

    def busy(self, handle):
        """The lowest call whose access is not ENDED and that names handle."""
        for cid in sorted(self.calls):
            c = self.calls[cid]
            if c.access != ENDED and any(r.handle == handle for r in c.rows):
                return c
        return None

    def unregister(self, handle):
        r = self.regions.get(handle)
        if r is None:
            return  # stale: a no-op (D-REG-3)
        c = self.busy(handle)
        if c is not None:
            raise DriverError(BUSY, "D-REG-6: region %r (handle %d) is named by call %d whose access is %s"
                              % (r.label, handle, c.id, c.access))
        r.close()
        del self.regions[handle]

    def unregister_together(self, handles):
        failed = []
        for h in handles:
            try:
                self.unregister(h)
            except DriverError:
                failed.append(self.regions[h].label)
        if failed:
            raise DriverError(IN_DOUBT, "D-TOG-4: busy regions stay registered", failed)

    def live(self, handle):
        return handle in self.regions

    # --- lookups -----------------------------------------------------------

    def contains(self, keys):
        if len(keys) > self.max_rows:
            raise DriverError(INVALID, "D-LOOK-1: %d keys, at most %d" % (len(keys), self.max_rows))
        if self.stopping:
            raise DriverError(LOOKUP_FAILED, "the driver is shutting down")
        return [k in self.store for k in keys]

    def delete(self, key):
        self.store.pop(key, None)

    def flush(self):
        self.store.clear()

    # --- calls -------------------------------------------------------------

    def validate(self, call):
        """RowBatch.Validate (D-BATCH-VALID, D-BATCH-KEYS)."""
        if call.dir not in ("fetch", "publish"):
            raise DriverError(INVALID, "direction %r" % call.dir)
        n = len(call.rows)
        if n == 0 or n > self.max_rows:
            raise DriverError(INVALID, "%d rows, want 1..%d" % (n, self.max_rows))
        keys, slots = {}, {}
        for i, row in enumerate(call.rows):
            if not row.key:
                raise DriverError(INVALID, "row %d has an empty key" % i)
            self.check_key(keys, i, row)
            keys[row.key] = i
            r = self.regions.get(row.handle)
            if r is None:
                raise DriverError(INVALID, "row %d: handle %d is not a live registration" % (i, row.handle))
            if not 0 <= row.slot < r.slots:
                raise DriverError(INVALID, "row %d: slot %d outside region %r" % (i, row.slot, r.label))
            if (row.handle, row.slot) in slots:
                raise DriverError(INVALID, "rows %d and %d both use slot %d of region %r"
                                  % (slots[(row.handle, row.slot)], i, row.slot, r.label))
            slots[(row.handle, row.slot)] = i

    def check_key(self, keys, i, row):
        if row.key in keys:
            raise DriverError(INVALID, "D-BATCH-KEYS: rows %d and %d both name key %r" % (keys[row.key], i, row.key))

    def submit(self, call):
        if self.draining:
            raise DriverError(CLOSED, "the driver is draining")
        self.validate(call)
        self.calls[call.id] = call

    def start(self, call):
        self.seq += 1
        heapq.heappush(self.queue, (time.monotonic() + self.latency, self.seq, call))
        self.cond.notify_all()

    def cancel(self, call):
        if call is self.running or call.final() or call.access != ACCESS_PENDING:
            return  # running (completion wins) or done
        # Not started, and the worker skips cancelled calls: nothing will
        # touch its rows, ever (D-CAN-2: NOT_ATTEMPTED, and access ends on
        # that proof, not on the cancel itself).
        call.update(results=[NOT_ATTEMPTED if s == PENDING else s for s in call.results], access=ENDED)
        self.settle(call)

    def settle(self, call):
        if call.settled():
            self.calls.pop(call.id, None)

    def _work(self):
        with self.cond:
            while True:
                now = time.monotonic()
                if self.queue and self.queue[0][0] <= now:
                    _, _, call = heapq.heappop(self.queue)
                    if call.cancelled or call.final():
                        continue
                    self.running = call
                    try:
                        self.transfer(call)
                    finally:
                        self.running = None
                    self.settle(call)
                    continue
                if self.quit:
                    return
                self.cond.wait(self.queue[0][0] - now if self.queue else None)

    def transfer(self, call):
        if call.dir == "publish":
            self.publish(call)
        else:
            self.fetch(call)

    def publish(self, call):
        vals = [self.regions[row.handle].read_slot(row.slot) for row in call.rows]
        # The copies are private: the caller's slots are never touched again.
        call.update(access=ENDED)
        results = list(call.results)
        for i, row in enumerate(call.rows):
            self.store.setdefault(row.key, vals[i])  # first writer wins (D-SUB-4)
            results[i] = OK
        call.update(results=results)

    def fetch(self, call):
        results = list(call.results)
        for i, row in enumerate(call.rows):
            results[i] = self.fetch_row(call, i, row)
        self.finish_fetch(call, results)

    def fetch_row(self, call, i, row):
        r = self.regions[row.handle]
        val = self.store.get(row.key)
        if val is None:
            return self.absent()
        if len(val) != r.slot_bytes:
            return FAULT  # slot untouched
        r.write_slot(row.slot, val)
        return OK

    def absent(self):
        return MISS if self.absent_is_miss else FAULT

    def finish_fetch(self, call, results):
        call.update(results=results, access=ENDED)

    # --- drain and shutdown ------------------------------------------------

    def drain(self):
        self.draining = True
        pending = [cid for cid, c in self.calls.items() if not c.settled()]
        return not pending, pending

    def shutdown(self, timeout):
        self.draining = self.stopping = True
        for cid in sorted(self.calls):
            c = self.calls.get(cid)
            if c is not None:
                c.cancelled = True
                self.cancel(c)
        deadline = time.monotonic() + timeout
        while any(not c.settled() for c in self.calls.values()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.cond.wait(left)
        labels, retained = [], set()
        for cid in sorted(self.calls):
            c = self.calls[cid]
            if c.access == ENDED:
                continue
            # Given up: it may still touch its rows (it never does here: the
            # worker holds the lock for a whole transfer, but a driver over a
            # real transport could).
            c.update(results=[FAULT if s == PENDING else s for s in c.results], access=UNPROVABLE)
            labels.append("call:%d:unprovable" % cid)
            retained.update(row.handle for row in c.rows)
        for h in sorted(self.regions):
            r = self.regions[h]
            if h in retained:
                labels.append("region:%s:retained" % r.label)
            else:
                r.close()
                del self.regions[h]
        self.quit = True
        self.cond.notify_all()
        return labels

    def close(self):
        self.quit = True
        self.cond.notify_all()
