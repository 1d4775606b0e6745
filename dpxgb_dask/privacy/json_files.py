"""One JSON file shared by the processes of one machine (a scheduler's budget file, a silo's
ledger): an exclusive lock while it is read and written, and a write that a reader sees
whole or not at all. Standard library only: a silo's worker imports it without the
accountants."""
import contextlib
import json
import os
import tempfile

try:
    import fcntl
except ImportError:  # not POSIX: one process per file
    fcntl = None


@contextlib.contextmanager
def locked_file(path, create=False):
    """Hold an exclusive lock on ``<path>.lock`` (``fcntl.flock``) for the block, so that
    the processes of one machine that share ``path`` read and write it one at a time;
    ``create``: make its directory first (without it, a missing directory takes no lock:
    there is nothing to read)."""
    directory = os.path.dirname(os.path.abspath(path))
    if create:
        os.makedirs(directory, exist_ok=True)
    lock = None
    if os.path.isdir(directory):
        lock = open(os.fspath(path) + ".lock", "a")
        if fcntl is not None:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
    try:
        yield
    finally:
        if lock is not None:
            lock.close()  # (releases the lock)


def write_json_atomically(path, data):
    """Write ``data`` as JSON to ``path`` through a temporary file of its directory,
    ``fsync`` and ``os.replace``: a reader sees the old file or the new one, never half."""
    fd, tmp = tempfile.mkstemp(prefix=".dpxgb-", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, allow_nan=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
