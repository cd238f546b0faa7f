"""What every model of the hub's own making shares: its config as a plain dict, and no
structured output (the hub never asks strands for one)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, TypeVar

from pydantic import BaseModel
from strands.models import Model
from strands.types.content import Messages

T = TypeVar("T", bound=BaseModel)


class PlainModel(Model):
    """A strands model configured by a dict; subclasses write ``stream``."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return dict(self.config)

    def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        raise NotImplementedError(f"{type(self).__name__} produces no structured output")
