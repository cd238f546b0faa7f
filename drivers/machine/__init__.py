"""The machine's own camera (OpenCV) and microphone (PortAudio through sounddevice)."""
