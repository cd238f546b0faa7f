"""What the tests and the benchmarks both use to drive a running hub: waiting on a condition
(``waits``), reading a chat's Server-Sent Events strictly (``sse``) and keeping what a driver
audits and emits outside a hub (``driver_host``), and the machine's own camera and microphone
turned off for a hub they start (``machine``). Both sides import it
from here, so a benchmark never imports the test suite. Not shipped with the hub."""
