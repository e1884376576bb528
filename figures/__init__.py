"""Paper figures: one module per paper (`figures.<paper>`), one function per figure, each
declared with its [`caption`][] and writing PNG + PDF + the JSON data behind it. Each module's
`FIGURES` (made by [`named_figures`][]) maps a figure's name, `<paper>_<function>`, to
`fn(out_dir, full) -> list[Path]`; the registry of papers (`attnflow.papers`) finds them by the
paper's name.
"""

from ._save import PRINT_WIDTH, SMALLEST_TEXT, caption, named_figures, printed_size, save_figure

__all__ = ["PRINT_WIDTH", "SMALLEST_TEXT", "caption", "named_figures", "printed_size", "save_figure"]
