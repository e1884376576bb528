"""attnflow: simulate how one-layer transformers learn, and check the theorems about it.

The command line (`attnflow verify | simulate | figures | reproduce`) lives in
[`attnflow.cli`][]; the library is the packages `dynamics`, `tasks`, `theory`, `figures`.
"""

__version__ = "0.1.0"
