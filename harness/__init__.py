"""What the tests and the benchmarks both use to drive a running hub: waiting on a condition
(``waits``) and reading a chat's Server-Sent Events strictly (``sse``). Both sides import it
from here, so a benchmark never imports the test suite. Not shipped with the hub."""
