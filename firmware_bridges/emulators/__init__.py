"""Software boards for tests and demos: the same bytes as the real hardware."""
