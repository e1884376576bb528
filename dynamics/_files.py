"""Files that are whole or absent: atomic writes, output folders tried before any work, and the
temporary files of killed processes cleaned up."""

import contextlib
import errno
import os
import platform
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO

_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.attnflow-tmp-(?P<host>[A-Za-z0-9_-]*)-(?P<pid>\d+)-[0-9a-f]+$")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", platform.node())


def temporary_path(path: str | os.PathLike) -> Path:
    """A fresh name beside `path` for a file or folder that becomes `path` by one rename, hidden
    and marked with this host and process, so that
    [`remove_stale_temporaries`][dynamics.store.remove_stale_temporaries] can tell one left by a killed
    process from one still being written.

    **Example:**

        >>> import os
        >>> import dynamics
        >>> name = dynamics.store.temporary_path("out/sweep.zarr").name
        >>> name.startswith(".sweep.zarr.attnflow-tmp-"), f"-{os.getpid()}-" in name
        (True, True)
    """
    path = Path(path)
    return path.with_name(f".{path.name}.attnflow-tmp-{_host()}-{os.getpid()}-{secrets.token_hex(4)}")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside `path` for writing; when the block ends without an error, flush
    it to disk and rename it over `path`, else remove it. A reader never sees half a file, and a
    failure (a full disk, an interrupt) leaves `path` as it was. The file's mode follows the umask.

    **Arguments:** `path`: the file to write (its folder must exist); `mode`: `"w"` (text) or
    `"wb"`.

    **Example:** a file is there whole, or not at all:

        >>> import pathlib
        >>> import tempfile
        >>> import dynamics
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> with dynamics.store.atomic_write(folder / "a.txt") as f:
        ...     _ = f.write("done")
        >>> try:
        ...     with dynamics.store.atomic_write(folder / "b.txt") as f:
        ...         _ = f.write("half")
        ...         raise OSError("disk full")
        ... except OSError:
        ...     pass
        >>> sorted(p.name for p in folder.iterdir()), (folder / "a.txt").read_text()
        (['a.txt'], 'done')
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    tmp = temporary_path(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # less the umask, as any new file
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def alive(pid: int) -> bool:
    """Whether the process `pid` of this host is running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Remove the temporary files and folders in `folder` that a process of this host left when it
    was killed while writing (see [`atomic_write`][dynamics.store.atomic_write]); those of running processes
    stay.

    **Returns:** the paths removed.

    **Example:** a temporary file named for a process that has ended goes, this process's stays:

        >>> import os
        >>> import pathlib
        >>> import subprocess
        >>> import sys
        >>> import tempfile
        >>> import dynamics
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> code = "import os; print(os.getpid())"
        >>> ended = subprocess.run([sys.executable, "-c", code], capture_output=True)
        >>> mine = dynamics.store.temporary_path(folder / "plot.png")
        >>> theirs = mine.with_name(mine.name.replace(f"-{os.getpid()}-", f"-{int(ended.stdout)}-"))
        >>> mine.touch(), theirs.touch()
        (None, None)
        >>> [p.name == theirs.name for p in dynamics.store.remove_stale_temporaries(folder)]
        [True]
        >>> [p.name == mine.name for p in folder.iterdir()]
        [True]
    """
    removed = []
    folder = Path(folder)
    if not folder.is_dir():
        return removed
    for entry in folder.iterdir():
        match = _TEMPORARY.match(entry.name)
        if not match or match["host"] != _host() or alive(int(match["pid"])):
            continue
        with contextlib.suppress(FileNotFoundError):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry)
    return removed


def _reason(err: OSError) -> str:
    messages = {
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on the device",
        errno.ENAMETOOLONG: "a name in it is too long",
        errno.ENOTDIR: "a part of it is a file, not a folder",
        errno.ENOENT: "it cannot be created there",
        errno.EDQUOT: "the disk quota is exceeded",
    }
    return messages.get(err.errno, err.strerror or type(err).__name__)


def _named_path(path: str | os.PathLike, what: str) -> Path:
    """`path` as a `Path`, refused where it names nothing (an empty or blank name, which `Path`
    would take as the working folder) or is relative to a working folder that no longer exists."""
    if not os.fspath(path).strip():
        raise ValueError(f"{what} must name a path, got {os.fspath(path)!r}")
    path = Path(path)
    if not path.is_absolute():
        try:
            os.getcwd()
        except FileNotFoundError:
            raise ValueError(
                f"{what} {path} is relative to the working folder, which no longer exists: change to a "
                "folder that does, or give an absolute path"
            ) from None
    return path


def prepare_folder(path: str | os.PathLike, what: str = "the output folder") -> Path:
    """Create `path` (with its parents) and write and remove a file in it, before any work: a
    folder that cannot hold the results is refused now, not after the runs.

    **Arguments:** `path`; `what`: how the message names it (e.g. `"--out"`).

    **Returns:** `path`.

    **Raises:** `ValueError`, one line naming `what`, the path and why: a file or a dangling
    link in the way, no permission (root included: the folder is tried, not asked about), a
    read-only or full file system, a name too long, an empty name, a relative path where the
    working folder was removed.

    **Example:**

        >>> import pathlib
        >>> import tempfile
        >>> import dynamics
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> dynamics.store.prepare_folder(folder / "a" / "b").is_dir()
        True
        >>> (folder / "file").write_text("x")
        1
        >>> dynamics.store.prepare_folder(folder / "file", "--out")
        Traceback (most recent call last):
        ...
        ValueError: --out .../file cannot be written: it is a file, not a folder
    """
    path = _named_path(path, what)
    try:
        if path.is_symlink() and not path.exists():
            why = f"it is a link to {os.readlink(path)}, which does not exist"
            raise ValueError(f"{what} {path} cannot be written: {why}")
        if path.exists() and not path.is_dir():
            raise ValueError(f"{what} {path} cannot be written: it is a file, not a folder")
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"{what} {path} cannot be written: {_reason(err)}") from None
    try:
        probe = temporary_path(path / "probe")
        probe.touch(exist_ok=False)
        probe.unlink()
    except OSError as err:
        why = "no file can be created in it" if err.errno == errno.ENOENT else _reason(err)
        raise ValueError(f"{what} {path} cannot be written: {why}") from None
    return path


def prepare_file(path: str | os.PathLike, what: str = "the output file") -> Path:
    """Check, before any work, that `path` can be written: its folder is prepared (see
    [`prepare_folder`][dynamics.store.prepare_folder]) and an existing file opened for appending (nothing in
    it changes).

    **Returns:** `path`.

    **Raises:** `ValueError`, one line naming `what`, the path and why.

    **Example:**

        >>> import pathlib
        >>> import tempfile
        >>> import dynamics
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> dynamics.store.prepare_file(folder / "results" / "verify.json").parent.is_dir()
        True
        >>> dynamics.store.prepare_file(folder / "results", "--json")
        Traceback (most recent call last):
        ...
        ValueError: --json .../results cannot be written: it is a folder
    """
    path = _named_path(path, what)
    prepare_folder(path.parent, f"the folder of {what}")
    try:
        if path.is_dir():
            raise ValueError(f"{what} {path} cannot be written: it is a folder")
        if path.exists():
            with open(path, "ab"):
                pass
        elif len(os.fsencode(path.name)) > 255:
            raise OSError(errno.ENAMETOOLONG, "")
    except OSError as err:
        raise ValueError(f"{what} {path} cannot be written: {_reason(err)}") from None
    return path


def describe_os_error(err: OSError) -> str:
    """One line for a file-system error: why, in words, and where.

    **Example:**

        >>> import errno
        >>> import dynamics
        >>> full = OSError(errno.ENOSPC, "No space left on device", "/data/s.zarr/y/0.0")
        >>> dynamics.store.describe_os_error(full)
        'no space left on the device: /data/s.zarr/y/0.0'
    """
    where = f" {err.filename}" if err.filename else ""
    return f"{_reason(err)}{':' if where else ''}{where}"
