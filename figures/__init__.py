"""Paper figures: one module per paper (`figures.scan_snap`, ...), one function per figure, each
writing PNG + PDF + the JSON data behind it. Each module's `FIGURES` maps a figure's name (the
paper's name as prefix) to `fn(out_dir, full) -> list[Path]`; the registry of papers
(`attnflow.papers`) gathers them.
"""

from ._save import save_figure

__all__ = ["save_figure"]
