"""Broken Python drivers: the reference driver with one planted fault each,
proving that certification across the process boundary can fail. BROKEN
maps a name to (the class, the rule certification must fail it on, what is
planted). FAULTY are processes that break the protocol itself (the parent
reports an incident, kills the process and goes on).

    python3 python/broken_driver.py LateWriteAfterEnded
"""

import os
import sys
import time

from .adapter import BUSY, ENDED, FAULT, MISS, OK, PENDING, DriverError, log
from .reference import MemoryDriver


class LateWriteAfterEnded(MemoryDriver):
    """Reports a FETCH ENDED, then writes its slots again, late: at each of
    the next three requests (the transfer's DMA lands after the driver said
    it was over). The mapping is the caller's memory: the write lands in the
    caller's slot, released or not, and the caller's audit finds it there."""

    name = "broken:LateWriteAfterEnded"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.late = []  # (region, slot, times left)

    def finish_fetch(self, call, results):
        super().finish_fetch(call, results)
        for i, row in enumerate(call.rows):
            if results[i] == OK:
                self.late.append([self.regions[row.handle], row.slot, 3])

    def before_request(self, msg):
        keep = []
        for item in self.late:
            r, slot, n = item
            if r.mm is not None:
                r.write_slot(slot, bytes([0xEE]) * r.slot_bytes)
            if n > 1:
                keep.append([r, slot, n - 1])
        self.late = keep


class TouchesOnMiss(MemoryDriver):
    """Writes the slot of a FETCH row it reports MISS."""

    name = "broken:TouchesOnMiss"

    def fetch_row(self, call, i, row):
        st = super().fetch_row(call, i, row)
        if st == MISS:
            r = self.regions[row.handle]
            r.write_slot(row.slot, bytes([0xEE]) * r.slot_bytes)
        return st


class WritesAfterUnregister(MemoryDriver):
    """Keeps a region's mapping after unregistering it and writes the slots
    it fetched into, the next time a request arrives."""

    name = "broken:WritesAfterUnregister"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.fetched = {}  # handle -> set of slots
        self.gone = []  # (region, slots)

    def finish_fetch(self, call, results):
        super().finish_fetch(call, results)
        for row in call.rows:
            self.fetched.setdefault(row.handle, set()).add(row.slot)

    def unregister(self, handle):
        r = self.regions.get(handle)
        if r is None:
            return
        c = self.busy(handle)
        if c is not None:
            raise DriverError(BUSY, "region %r is busy" % r.label)
        del self.regions[handle]  # the mapping stays open
        self.gone.append((r, self.fetched.pop(handle, set())))

    def before_request(self, msg):
        for r, slots in self.gone:
            for slot in slots:
                r.write_slot(slot, bytes([0xEE]) * r.slot_bytes)
        self.gone = []


class MissAsFault(MemoryDriver):
    """Answers FAULT for an absent key while declaring AbsentIsMiss."""

    name = "broken:MissAsFault"

    def absent(self):
        return FAULT


class AcceptsRepeatedKey(MemoryDriver):
    """Accepts a batch that names one key twice."""

    name = "broken:AcceptsRepeatedKey"

    def check_key(self, keys, i, row):
        pass


class LostNotification(MemoryDriver):
    """Never signals a call's last change: the state changes, the
    notification says "signal": false."""

    name = "broken:LostNotification"

    def finish_fetch(self, call, results):
        call.update(results=results, access=ENDED, signal=False)

    def publish(self, call):
        vals = [self.regions[row.handle].read_slot(row.slot) for row in call.rows]
        call.update(access=ENDED)
        for i, row in enumerate(call.rows):
            self.store.setdefault(row.key, vals[i])
        call.update(results=[OK] * len(call.rows), signal=False)


class UnregistersBusy(MemoryDriver):
    """Unregisters a region a call whose access is not ENDED still names."""

    name = "broken:UnregistersBusy"

    def busy(self, handle):
        return None


class DrainLies(MemoryDriver):
    """Drain answers done, with no pending call, whatever is in flight."""

    name = "broken:DrainLies"

    def drain(self):
        self.draining = True
        return True, []


class RegressingResult(MemoryDriver):
    """Changes a final result: a FETCH row reported OK becomes FAULT in a
    later notification (sent when the next request arrives, so the OK was
    seen first)."""

    name = "broken:RegressingResult"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.regress = []

    def finish_fetch(self, call, results):
        super().finish_fetch(call, results)
        if OK in results:
            self.regress.append(call)

    def before_request(self, msg):
        for call in self.regress:
            i = call.results.index(OK)
            call.update(results={i: FAULT})
        self.regress = []


# name -> (class, rule, planted fault)
BROKEN = {
    "LateWriteAfterEnded": (LateWriteAfterEnded, "D-ACCESS-END", "writes a FETCH slot again after reporting ENDED"),
    "TouchesOnMiss": (TouchesOnMiss, "D-STATUS", "writes the slot of a FETCH row it reports MISS"),
    "WritesAfterUnregister": (WritesAfterUnregister, "D-ACCESS-END", "writes a region after unregistering it (S-NO-LATE-ACCESS)"),
    "MissAsFault": (MissAsFault, "D-MISS-HONEST", "an absent key is answered FAULT"),
    "AcceptsRepeatedKey": (AcceptsRepeatedKey, "D-BATCH-KEYS", "accepts a batch naming one key twice"),
    "LostNotification": (LostNotification, "D-CB-2", "no callback after a call's last change"),
    "UnregistersBusy": (UnregistersBusy, "D-REG-6", "unregisters a region a live call still uses"),
    "DrainLies": (DrainLies, "D-DRAIN-1", "drain reports done with calls pending"),
    "RegressingResult": (RegressingResult, "D-CB-3", "a final result changes"),
}


class Faulty(MemoryDriver):
    """A process that breaks the protocol after `after` requests: how is the
    subclass's business."""

    def __init__(self, after=20, once=None, **kw):
        super().__init__(**kw)
        self.after = after
        self.once = once
        self.requests = 0

    def before_request(self, msg):
        self.requests += 1
        if self.requests == self.after and self.first():
            self.misbehave(msg)

    def first(self):
        """With once=PATH only the first process to create PATH misbehaves."""
        if not self.once:
            return True
        try:
            os.close(os.open(self.once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            return False

    def misbehave(self, msg):
        raise NotImplementedError


class Garbage(Faulty):
    name = "faulty:Garbage"

    def misbehave(self, msg):
        sys.stdout.buffer.write(b"this is not JSON\n")
        sys.stdout.buffer.flush()


class Hang(Faulty):
    name = "faulty:Hang"

    def misbehave(self, msg):
        log("faulty:Hang: stops answering at request %d (%s)" % (self.requests, msg.get("op")))
        while True:
            time.sleep(3600)


class Die(Faulty):
    name = "faulty:Die"

    def misbehave(self, msg):
        log("faulty:Die: exits at request %d (%s)" % (self.requests, msg.get("op")))
        sys.stdout.buffer.flush()
        os._exit(3)


class Flood(Faulty):
    name = "faulty:Flood"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.flooding = False

    def misbehave(self, msg):
        self.flooding = True

    def finish_fetch(self, call, results):
        super().finish_fetch(call, results)
        if self.flooding:
            self.flooding = False
            for _ in range(100000):
                call.update()


FAULTY = {"Garbage": Garbage, "Hang": Hang, "Die": Die, "Flood": Flood}

__all__ = ["BROKEN", "FAULTY", "PENDING"]
