"""Operating-system file locks (`flock`) between the processes that write one store: writers share
the store's lock, `overwrite` needs it alone, and a block is claimed by the one process computing it.

A lock is held by an open file, so the system releases it when its process dies, however it dies:
a killed writer never leaves a store locked. The `filelock` package offers only exclusive locks,
and the store needs shared ones (any number of writers, but no writer while it is replaced).
Where the file system has no locks (some network file systems), a warning says so once and the
writers proceed unprotected, as shards on separate blocks need no lock.
"""

import contextlib
import errno
import fcntl
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

_UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}
_warned = False


def _warn_unsupported(path: Path, err: OSError) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            f"the file system of {path} has no file locks ({err.strerror}): writers of one store are "
            "not protected from each other here (shards, which write separate blocks, need no lock)",
            stacklevel=3,
        )


class Held:
    """A lock held (or not) by [`file_lock`][]."""

    def __init__(self, fd: int, held: bool, supported: bool):
        self.fd, self.held, self.supported = fd, held, supported

    def share(self) -> None:
        """Turn an exclusive lock into a shared one (other processes may then share it)."""
        if self.held and self.supported:
            fcntl.flock(self.fd, fcntl.LOCK_SH)

    @contextlib.contextmanager
    def alone(self) -> Iterator[bool]:
        """Turn a shared lock into an exclusive one for the block, if no other process shares it;
        shared again after it.

        **Yields:** whether it is held alone (`False`: another process shares it, and the lock
        stays shared).
        """
        if not (self.held and self.supported):
            yield True
            return
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fcntl.flock(self.fd, fcntl.LOCK_SH)  # a conversion may drop the lock before it fails
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_SH)


@contextlib.contextmanager
def file_lock(path: Path, *, shared: bool = False, blocking: bool = True) -> Iterator[Held]:
    """Hold an `flock` on `path` (created if missing) for the block.

    **Arguments:** `path`; `shared`: a shared lock (else exclusive); `blocking`: wait for it
    (else give up at once when another process holds a conflicting lock).

    **Yields:** a [`Held`][] saying whether the lock is held (also where the file system has no
    locks: then nothing is locked).
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        flags = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB)
        try:
            fcntl.flock(fd, flags)
        except BlockingIOError:
            yield Held(fd, False, True)
            return
        except OSError as err:
            if err.errno not in _UNSUPPORTED:
                raise
            _warn_unsupported(path, err)
            yield Held(fd, True, False)
            return
        yield Held(fd, True, True)
    finally:
        os.close(fd)


def store_lock_path(store: Path) -> Path:
    """The lock file of the store at `store`: beside it, so that it outlives a replaced store."""
    return store.with_name(f".{store.name}.lock")
