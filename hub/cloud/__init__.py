"""The hub as a dial-in device of the cloud relay (docs/protocol.md, dial-in devices, from the
device's side): joining, the heartbeat and relay loop, a durable outbox for everything owed to the
cloud."""
