"""The parsed document, and the bounded copy of a JSON schema that the model reads.

A stranger's schema can nest without end, refer to itself, or be far larger than any model
should read on every turn. So nothing of it is handed on as it is: local ``$ref``s are followed
to a fixed depth and a cycle is cut where it closes, only known keywords are copied, numbers
that JSON cannot carry are dropped, and each operation's input schema has a node budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from hub.tinys.openapi.model import (
    FIELD_DESCRIPTION_CHARS,
    MAX_ENUM,
    MAX_PROPERTIES,
    MAX_REF_DEPTH,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_NODES,
)
from hub.tinys.openapi.names import shorten

__all__ = ["Document", "SchemaCopy", "is_scalar"]


class Document:
    """The parsed document, and local ``$ref`` resolution with every walk bounded."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def pointer(self, ref: str) -> Any:
        """The node a local reference (``#/components/schemas/Pet``) names, or None."""
        if ref != "#" and not ref.startswith("#/"):
            return None
        node: Any = self.root
        for raw in ref[2:].split("/") if ref != "#" else []:
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping):
                node = node.get(part)
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node

    def follow(self, node: Any) -> Any:
        """`node` with its ``$ref`` chain followed (parameters, bodies, path items); None when
        the chain leaves the document, is broken or goes round."""
        for _ in range(MAX_REF_DEPTH + 1):
            if not (isinstance(node, Mapping) and isinstance(node.get("$ref"), str)):
                return node
            node = self.pointer(node["$ref"])
        return None


class SchemaCopy:
    """A JSON schema the model can read, copied from the document's: known keywords only,
    references inlined to a bounded depth, a cycle cut where it closes, a node budget."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.nodes = 0

    def of(self, node: Any, depth: int = 0, refs: tuple[str, ...] = ()) -> dict[str, Any]:
        self.nodes += 1
        if self.nodes > MAX_SCHEMA_NODES or depth > MAX_SCHEMA_DEPTH:
            return {"description": "(more of this schema is not shown: it is too large)"}
        if not isinstance(node, Mapping):
            return {}
        ref = node.get("$ref")
        if isinstance(ref, str):
            shown = shorten(ref.rsplit("/", 1)[-1], 60)
            if ref in refs or len(refs) >= MAX_REF_DEPTH:
                return {"type": "object", "description": f"(nested {shown}, the same shape again)"}
            target = self.document.pointer(ref)
            if not isinstance(target, Mapping):
                return {"description": f"(the reference {shorten(ref, 100)} is not followed)"}
            return self.of(target, depth + 1, (*refs, ref))
        return self._keywords(node, depth, refs)

    def _keywords(
        self, node: Mapping[str, Any], depth: int, refs: tuple[str, ...]
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        kind = node.get("type")
        if isinstance(kind, str) or (
            isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind)
        ):
            out["type"] = kind if isinstance(kind, str) else list(kind[:8])
        for key in ("description", "title"):
            if isinstance(node.get(key), str) and node[key].strip():
                out[key] = shorten(node[key], FIELD_DESCRIPTION_CHARS)
        for key in ("format", "pattern"):
            if isinstance(node.get(key), str) and len(node[key]) <= 200:
                out[key] = node[key]
        for key in (
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
        ):
            value = node.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and _finite(value):
                out[key] = value
        if "default" in node and is_scalar(node["default"]):
            out["default"] = node["default"]
        enum = node.get("enum")
        if isinstance(enum, list) and enum and all(is_scalar(v) for v in enum):
            out["enum"] = list(enum[:MAX_ENUM])
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            names = [k for k in properties if isinstance(k, str)][:MAX_PROPERTIES]
            out["properties"] = {k: self.of(properties[k], depth + 1, refs) for k in names}
            required = node.get("required")
            if isinstance(required, list):
                out["required"] = [r for r in required if isinstance(r, str) and r in names]
        if isinstance(node.get("items"), Mapping):
            out["items"] = self.of(node["items"], depth + 1, refs)
        extra = node.get("additionalProperties")
        if isinstance(extra, bool):
            out["additionalProperties"] = extra
        elif isinstance(extra, Mapping):
            out["additionalProperties"] = self.of(extra, depth + 1, refs)
        for key in ("anyOf", "oneOf", "allOf"):
            if isinstance(node.get(key), list) and node[key]:
                out[key] = [self.of(part, depth + 1, refs) for part in node[key][:10]]
        return out


def _finite(value: int | float) -> bool:
    # JSON has no NaN or infinity (YAML has: .nan, .inf); some providers reject them.
    return isinstance(value, int) or math.isfinite(value)


def is_scalar(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= 200
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _finite(value)
    return value is None or isinstance(value, bool)
