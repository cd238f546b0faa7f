"""Faithful stand-ins for what the hub talks to, shared by the tests and the benchmarks: a
scripted Ollama (the real ``/api/chat`` NDJSON stream, tool calls, errors), the Telegram Bot API,
a model runner that speaks the runner protocol from a script, the daemon loop the device
protocol documents, and the machine's own webcam and microphone (OpenCV's and sounddevice's
shapes). Not shipped with the hub."""
