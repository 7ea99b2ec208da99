# The module frb/_build_info.py is written when meson builds the package (tools/build_info.py);
# this stub stands for it in the source tree (mypy run from the repository root).
from typing import Any

VERSION: str
BUILD: dict[str, Any]
