"""Jobs for the launch tests, light to import (a local job's process imports the function's module)."""

import os
import time


def stay(folder: str, index: int, seconds: float) -> None:
    """A job that stays `seconds` and writes when it started and ended to `folder/index`."""
    start = time.time()
    time.sleep(seconds)
    with open(os.path.join(folder, str(index)), "w") as f:
        f.write(f"{start} {time.time()}")
