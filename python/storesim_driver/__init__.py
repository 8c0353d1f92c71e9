"""storesim_driver: write a storesim store driver in Python.

The driver runs as a child process of storesim and speaks the line-delimited
JSON protocol of docs/PROTOCOL.md on its stdin/stdout; region memory is
shared with storesim through a mapped file. Standard library only, Python
3.10 or later.

    from storesim_driver import Driver, DriverError, serve
    class Mine(Driver): ...
    serve(Mine())

storesim_driver.reference.MemoryDriver is a complete driver over an
in-memory store that certifies; storesim_driver.broken holds broken ones.
"""

from .adapter import (  # noqa: F401
    ACCESS_PENDING, BAD_GEOMETRY, BUSY, CLOSED, ENDED, FAULT, IN_DOUBT, INVALID, LOOKUP_FAILED, MISS,
    NOT_ATTEMPTED, OK, PENDING, PROTOCOL, REFUSED, REJECTED, UNPROVABLE, UNREGISTER_FAILED, UNSUPPORTED,
    Call, Driver, DriverError, Region, Row, log, serve,
)
