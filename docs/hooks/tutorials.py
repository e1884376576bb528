"""The tutorials' pictures, drawn when the site is built by the commands the tutorials show.

A tutorial shows a plot as `![…](img/<file>.png)`; [`PICTURES`][] says which plot of which output
folder it is (`edge/plots/refine.png`). The commands that make the folders are the page's own: every
`attnflow sweep … --out FOLDER` line of its `bash` blocks, run as written in a folder kept for the
code being documented ([`tutorials_folder`][]), so a later build of the same code runs nothing and a
change to the engine, the command line or the examples draws the pictures anew. No picture is kept
in the site's sources."""

import hashlib
import logging
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
TUTORIALS = REPOSITORY / "docs" / "tutorials"
PICTURES = {
    "sweeping.md": {"refine.png": "edge/plots/refine.png", "refine_plane.png": "plane/plots/refine.png"},
    "landscape.md": {
        "teacher_phases_time.png": "teacher/plots/phases_time.png",
        "saddles.index_histogram.png": "teacher/plots/saddles.index_histogram.png",
    },
}
"""Each tutorial page's pictures: `img/<file>` -> the plot of the page's command that draws it,
relative to where the commands run."""
SOURCES = ("dynamics", "attnflow", "examples")
"""The packages whose files decide what the tutorials' commands draw."""
_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
log = logging.getLogger("mkdocs.hooks.tutorials")
_drawn: dict[str, Path] = {}
"""This build's pictures: `tutorials/img/<file>` -> the plot drawn."""


def commands(page: str) -> dict[str, list[str]]:
    """The `attnflow sweep` command lines of a tutorial page's `bash` blocks, continuation lines
    joined: output folder -> the command's arguments after `attnflow`."""
    found = {}
    for block in _BLOCK.findall((TUTORIALS / page).read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            if not line.startswith("attnflow sweep "):
                continue
            words = shlex.split(line, comments=True)
            if "--out" in words:
                found[words[words.index("--out") + 1]] = words[1:]
    return found


def tutorials_folder() -> Path:
    """Where the tutorials' commands run for the code being documented: a folder named by a digest
    of the files of [`SOURCES`][] and of the tutorial pages, beside the command line's compilation
    cache."""
    from attnflow._runtime import compile_cache_dir

    digest = hashlib.sha256()
    for path in sorted(p for package in SOURCES for p in (REPOSITORY / package).rglob("*.py")):
        digest.update(str(path.relative_to(REPOSITORY)).encode() + b"\0" + path.read_bytes())
    for page in sorted(PICTURES):
        digest.update(page.encode() + b"\0" + (TUTORIALS / page).read_bytes())
    return compile_cache_dir().parent / "docs-tutorials" / digest.hexdigest()[:16]


def draw_pictures(folder: Path) -> dict[str, Path]:
    """Run, in `folder`, each command whose plots a tutorial shows and has not drawn there yet.

    **Returns:** `tutorials/img/<file>` -> the plot, for every picture of [`PICTURES`][].

    **Raises:** `PluginError` when a picture has no command on its page, or a command fails or
    does not draw it.
    """
    from mkdocs.exceptions import PluginError

    folder.mkdir(parents=True, exist_ok=True)
    drawn = {}
    for page, pictures in PICTURES.items():
        lines = commands(page)
        for name, plot in pictures.items():
            out = plot.split("/")[0]
            if out not in lines:
                raise PluginError(
                    f"docs/tutorials/{page} shows img/{name} but runs no command with --out {out}"
                )
            if not (folder / plot).is_file():
                log.info(f"drawing the pictures of docs/tutorials/{page}: attnflow {shlex.join(lines[out])}")
                command = [sys.executable, "-m", "attnflow", *lines[out]]
                paths = os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")]))
                done = subprocess.run(
                    command,
                    cwd=folder,
                    env=os.environ | {"PYTHONPATH": paths},
                    capture_output=True,
                    text=True,
                )  # the examples' levels are found as from the repository's root
                if done.returncode != 0 or not (folder / plot).is_file():
                    raise PluginError(
                        f"attnflow {shlex.join(lines[out])} drew no {plot}:\n{done.stderr[-2000:]}"
                    )
            drawn[f"tutorials/img/{name}"] = folder / plot
    return drawn


def on_config(config):
    """Draw the tutorials' pictures (or find them drawn for this code)."""
    _drawn.clear()
    _drawn.update(draw_pictures(tutorials_folder()))
    return config


def on_files(files, config):
    """The tutorials' pictures, as files of the site."""
    from mkdocs.structure.files import File

    for uri, plot in _drawn.items():
        files.append(File.generated(config, uri, abs_src_path=str(plot)))
    return files
