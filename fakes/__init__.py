"""Faithful stand-ins for what the hub talks to, shared by the tests and the benchmarks: a
scripted Ollama (the real ``/api/chat`` NDJSON stream, tool calls, errors), the Telegram Bot API,
a model runner that speaks the runner protocol from a script, and the daemon loop the device
protocol documents. Not shipped with the hub."""
