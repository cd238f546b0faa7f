"""The device side: scripts that run on the boards, and emulators that speak their bytes."""
