"""The Flipper Zero: over USB (its text CLI, and the protobuf RPC for files) and over Bluetooth
LE (the RPC alone), its tools for the agent, and the capture of a real one's bytes."""
