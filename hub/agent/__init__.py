"""One chat turn: model choice, prompt, tool mounting, the SSE normaliser."""
