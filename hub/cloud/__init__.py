"""The hub as a dial-in device of the cloud relay (seed 001, Path B, from the device's side):
joining, the heartbeat and relay loop, a durable outbox for everything owed to the cloud."""
