"""The shapes of a tool's result: success, failure, a picture, a request the client runs."""

from __future__ import annotations

from typing import Any

from hub.devices.service import DeviceAnswer


def ok(text: str, **data: Any) -> dict[str, Any]:
    """A successful tool result: text for the model, and JSON for clients when there is some."""
    content: list[dict[str, Any]] = [{"text": text}]
    if data:
        content.append({"json": data})
    return {"status": "success", "content": content}


def failed(text: str) -> dict[str, Any]:
    return {"status": "error", "content": [{"text": text}]}


def with_image(text: str, jpeg: bytes, **data: Any) -> dict[str, Any]:
    """A success the model can look at: the text, the JSON, and the picture as an image block."""
    result = ok(text, **data)
    result["content"].append({"image": {"format": "jpeg", "source": {"bytes": jpeg}}})
    return result


def answer_result(answer: DeviceAnswer) -> dict[str, Any]:
    """What a dial-in device answered, as a tool result (its text, its images, or "pending")."""
    if answer.pending_id:
        return ok(
            f"{answer.device or 'The device'} is still working on it. Ask again later with "
            f"action 'result' and id {answer.pending_id}.",
            pending=True,
            id=answer.pending_id,
        )
    text = answer.text or "(the device answered with no text)"
    if answer.refused:
        text += f"\n(ignored {len(answer.refused)} image(s) not on this hub's media store)"
    content: list[dict[str, Any]] = [{"text": text}]
    content += [
        {"image": {"format": fmt, "source": {"bytes": data}}} for data, fmt in answer.images
    ]
    return {"status": "success", "content": content}
