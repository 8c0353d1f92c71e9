"""The protocol adapter: storesim's driver protocol (docs/PROTOCOL.md) on
stdin/stdout, spoken on behalf of a Driver object.

A driver implementer subclasses Driver and calls serve(MyDriver()). The
adapter reads one JSON request per line on stdin, calls the driver, writes
the answer as one JSON line on stdout, and writes a change notification
whenever the driver calls Call.update. stdout belongs to the protocol:
print diagnostics to stderr (log()).

Concurrency: every request is handled on the main thread while holding
driver.lock, and every Call.update takes the same lock to set the call's
state and write its notification in one step. So an answer never reflects a
state whose notification has not been written before it (the parent applies
lines in order). Worker threads the driver starts take driver.lock (or wait
on driver.cond, which releases it) around every change of shared state.
"""

import json
import mmap
import os
import sys
import threading

# Version 2: a region's slots start at "offset" in its shared file (the
# caller's memory itself, so nothing is copied either way).
PROTOCOL = 2

# Row statuses and access states, as they are written on the wire.
PENDING, OK, MISS, FAULT, NOT_ATTEMPTED = "pending", "ok", "miss", "fault", "not_attempted"
STATUSES = (PENDING, OK, MISS, FAULT, NOT_ATTEMPTED)
ACCESS_PENDING, ENDED, UNPROVABLE = "pending", "ended", "unprovable"
ACCESSES = (ACCESS_PENDING, ENDED, UNPROVABLE)

# Error kinds (see docs/PROTOCOL.md, "Errors").
INVALID = "invalid"
CLOSED = "closed"
REJECTED = "rejected"
REFUSED = "refused"
BAD_GEOMETRY = "bad_geometry"
BUSY = "busy"
UNREGISTER_FAILED = "unregister_failed"
LOOKUP_FAILED = "lookup_failed"
IN_DOUBT = "in_doubt"
UNSUPPORTED = "unsupported"


def log(*args):
    """Diagnostics go to stderr; stdout is the protocol's."""
    print(*args, file=sys.stderr, flush=True)


class DriverError(Exception):
    """An error answer: kind is one of the kinds above, labels name regions
    (in_doubt)."""

    def __init__(self, kind, message="", labels=None):
        super().__init__(message or kind)
        self.kind = kind
        self.message = message or kind
        self.labels = list(labels or [])


class Region:
    """A registered region: its geometry, the address range of the caller's
    memory (base, length: for overlap checks only) and the shared mapping of
    its slot area: size bytes at offset in the file path. The mapping is the
    caller's memory: a byte written there is in the caller's slot at once
    (and a write after the call ENDED is a late write the caller's audit
    finds)."""

    def __init__(self, msg):
        self.label = msg.get("label", "")
        self.slot_bytes = msg.get("slot_bytes", 0)
        self.slots = msg.get("slots", 0)
        self.base = msg.get("base", 0)
        self.length = msg.get("length", 0)
        self.path = msg.get("path", "")
        self.offset = msg.get("offset", 0)
        self.size = msg.get("size", 0)
        self.mm = None
        self._delta = 0  # where slot 0 is in mm (mmap offsets are page-aligned)

    def geometry_error(self):
        """The D-GEOM check of one region, or None."""
        if not self.label:
            return "region has no label"
        if self.slot_bytes <= 0:
            return "region %r: slot_bytes %d <= 0" % (self.label, self.slot_bytes)
        if self.slots <= 0:
            return "region %r: slots %d <= 0" % (self.label, self.slots)
        if self.slot_bytes * self.slots > self.length:
            return "region %r: %d slots of %d bytes exceed its %d bytes of memory" % (
                self.label, self.slots, self.slot_bytes, self.length)
        if not self.path or self.size < self.slot_bytes * self.slots or self.offset < 0:
            return "region %r: no shared mapping of its slot area" % self.label
        return None

    def overlaps(self, other):
        return (self.length > 0 and other.length > 0 and self.base < other.base + other.length
                and other.base < self.base + self.length)

    def open(self):
        """Map the shared file (the caller's slots, really shared)."""
        start = self.offset - self.offset % mmap.ALLOCATIONGRANULARITY
        try:
            fd = os.open(self.path, os.O_RDWR)
            try:
                self.mm = mmap.mmap(fd, self.offset - start + self.size, mmap.MAP_SHARED,
                                    mmap.PROT_READ | mmap.PROT_WRITE, offset=start)
            finally:
                os.close(fd)
        except (OSError, ValueError, OverflowError) as e:
            raise DriverError(REFUSED, "region %r: cannot map %d bytes at offset %d of %s: %s"
                              % (self.label, self.size, self.offset, self.path, e))
        self._delta = self.offset - start

    def close(self):
        if self.mm is not None:
            self.mm.close()
            self.mm = None

    def read_slot(self, slot):
        off = self._delta + slot * self.slot_bytes
        return self.mm[off:off + self.slot_bytes]

    def write_slot(self, slot, data):
        """Write data at the start of slot (at most the slot's size)."""
        if len(data) > self.slot_bytes:
            raise ValueError("write past the end of the slot")
        off = self._delta + slot * self.slot_bytes
        self.mm[off:off + len(data)] = data


class Row:
    __slots__ = ("key", "handle", "slot", "position")

    def __init__(self, msg):
        self.key = msg.get("key", "")
        self.handle = msg.get("handle", 0)
        self.slot = msg.get("slot", 0)
        self.position = msg.get("position", 0)


class Call:
    """One submitted call. Its state (results, access) changes only through
    update(), which writes the change notification."""

    def __init__(self, adapter, msg):
        self._adapter = adapter
        self.id = msg.get("call", 0)
        self.dir = msg.get("dir", "")
        self.rows = [Row(r) for r in msg.get("rows") or []]
        self.results = [PENDING] * len(self.rows)
        self.access = ACCESS_PENDING
        self.cancelled = False  # set by the adapter when "cancel" arrives
        self.started = False  # set by the adapter when "start" arrives
        self.notified = False  # a notification of the final state was written

    def final(self):
        return all(s != PENDING for s in self.results)

    def settled(self):
        """Every row final, access ENDED, and that state notified."""
        return self.final() and self.access == ENDED and self.notified

    def update(self, results=None, access=None, signal=True):
        """Set the call's state and write its change notification, in one
        step under the adapter's lock: results is a whole list or a dict
        {row: status}; rows that already have a final status keep it unless
        the driver means to break D-CB-3."""
        with self._adapter.lock:
            if isinstance(results, dict):
                for i, st in results.items():
                    self.results[i] = st
            elif results is not None:
                self.results = list(results)
            if access is not None:
                self.access = access
            self._adapter.notify(self, signal)
            self.notified = self.final() and self.access == ENDED
            self._adapter.cond.notify_all()


class Driver:
    """The interface a driver implements. Every method runs on the adapter's
    main thread, holding self.lock. Raise DriverError to answer an error."""

    name = "driver"
    together = False
    ops = ()  # optional ops offered: "delete", "flush", "live"

    # Set by serve() before hello.
    lock = None
    cond = None

    def hello(self, prefix, caps, scratch=""):
        """Answer the declaration: a dict with max_rows, absent_is_miss,
        fetch, publish, cancel. caps is what the parent asks for (a dict, or
        None); scratch, when not empty, is a directory every process of the
        run shares (keep a process-private store there)."""
        raise NotImplementedError

    def register(self, region):
        raise NotImplementedError

    def register_together(self, regions):
        raise DriverError(UNSUPPORTED, "no together-registration")

    def unregister(self, handle):
        raise NotImplementedError

    def unregister_together(self, handles):
        raise DriverError(UNSUPPORTED, "no together-registration")

    def contains(self, keys):
        raise NotImplementedError

    def submit(self, call):
        """Validate and accept the call (or raise). No byte of its rows may be
        touched before start(call)."""
        raise NotImplementedError

    def start(self, call):
        """The parent filled the PUBLISH slots: the call may run now. Must not
        block: hand it to a worker."""
        raise NotImplementedError

    def cancel(self, call):
        """Best effort; call.cancelled is already set."""

    def drain(self):
        """Stop admission; answer (done, [pending call ids])."""
        raise NotImplementedError

    def shutdown(self, timeout):
        """Answer the labels of what could not be released."""
        raise NotImplementedError

    def live(self, handle):
        raise DriverError(UNSUPPORTED, "no live probe")

    def delete(self, key):
        raise DriverError(UNSUPPORTED, "no delete")

    def flush(self):
        raise DriverError(UNSUPPORTED, "no flush")

    def before_request(self, msg):
        """Called with every request before it is handled (a hook for test
        drivers)."""

    def close(self):
        """stdin closed: stop every thread; the process exits after this."""


class Adapter:
    def __init__(self, driver, stdin, stdout):
        self.driver = driver
        self.stdin = stdin
        self.stdout = stdout
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.calls = {}
        driver.lock = self.lock
        driver.cond = self.cond

    def write(self, obj):
        line = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
        with self.lock:
            self.stdout.write(line)
            self.stdout.flush()

    def notify(self, call, signal=True):
        msg = {"op": "change", "call": call.id, "results": call.results, "access": call.access}
        if not signal:
            msg["signal"] = False
        self.write(msg)

    def answer(self, rid, **fields):
        fields["id"] = rid
        fields["ok"] = True
        self.write(fields)

    def error(self, rid, e):
        err = {"kind": e.kind, "message": e.message}
        if e.labels:
            err["labels"] = e.labels
        self.write({"id": rid, "ok": False, "error": err})

    def run(self):
        for raw in self.stdin:
            raw = raw.strip()
            if not raw:
                continue
            msg = json.loads(raw)
            with self.lock:
                self.driver.before_request(msg)
                self.handle(msg)
        with self.lock:
            self.driver.close()

    def handle(self, msg):
        op = msg.get("op")
        rid = msg.get("id")
        d = self.driver
        try:
            if op == "hello":
                if msg.get("protocol") != PROTOCOL:
                    raise DriverError("protocol", "the parent speaks protocol %r, this adapter speaks protocol %d"
                                      % (msg.get("protocol"), PROTOCOL))
                caps = d.hello(msg.get("prefix", ""), msg.get("caps"), msg.get("scratch", ""))
                self.answer(rid, protocol=PROTOCOL, driver=d.name, caps=caps, together=bool(d.together),
                            ops=list(d.ops))
            elif op == "register":
                r = Region(msg.get("region") or {})
                self.answer(rid, handle=d.register(r))
            elif op == "register_together":
                rs = [Region(x) for x in msg.get("regions") or []]
                self.answer(rid, handles=d.register_together(rs))
            elif op == "unregister":
                d.unregister(msg.get("handle", 0))
                self.answer(rid)
            elif op == "unregister_together":
                d.unregister_together(msg.get("handles") or [])
                self.answer(rid)
            elif op == "contains":
                self.answer(rid, found=d.contains(msg.get("keys") or []))
            elif op == "submit":
                c = Call(self, msg)
                d.submit(c)
                self.calls[c.id] = c
                self.answer(rid)
            elif op == "start":
                c = self.calls.get(msg.get("call"))
                if c is not None and not c.started:
                    c.started = True
                    d.start(c)
            elif op == "cancel":
                c = self.calls.get(msg.get("call"))
                if c is not None and not c.cancelled:
                    c.cancelled = True
                    d.cancel(c)
            elif op == "drain":
                done, pending = d.drain()
                self.answer(rid, done=bool(done), pending=sorted(pending))
            elif op == "shutdown":
                labels = d.shutdown(msg.get("timeout_ms", 2000) / 1000.0)
                self.answer(rid, labels=list(labels))
            elif op == "live":
                self.answer(rid, live=bool(d.live(msg.get("handle", 0))))
            elif op == "delete":
                d.delete(msg.get("key", ""))
                self.answer(rid)
            elif op == "flush":
                d.flush()
                self.answer(rid)
            elif rid is not None:
                raise DriverError(UNSUPPORTED, "unknown op %r" % op)
        except DriverError as e:
            if rid is not None:
                self.error(rid, e)


def serve(driver, stdin=None, stdout=None):
    """Speak the protocol for driver until stdin closes, then exit."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    Adapter(driver, stdin, stdout).run()
