"""The Flipper's ``storage`` command (``storage_cli.c``) over the state's files, and the path
rules and errors the RPC's storage requests share."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from firmware_bridges.emulators.flipper_shell import (
    ETX,
    ShellPort,
    read_quoted,
    read_word,
    scan_uints,
)
from firmware_bridges.emulators.flipper_state import parent_of

WRITE_BLOCK = 512
"""``storage write`` buffers typed text in blocks of this size (``storage_cli_write``)."""

# Storage error texts (storage_error_get_desc -> filesystem_api_error_get_desc).
FSE_NOT_READY = "filesystem not ready"
FSE_EXIST = "file/dir already exist"
FSE_NOT_EXIST = "file/dir not exist"
FSE_DENIED = "access denied"
FSE_INVALID_NAME = "invalid name/path"
FSE_NOT_IMPLEMENTED = "function not implemented"


class FsError(Exception):
    def __init__(self, desc: str) -> None:
        super().__init__(desc)
        self.desc = desc


class StoragePort(ShellPort):
    """The shell with ``storage``."""

    # --- storage (storage_cli.c) ---

    def _storage_usage(self) -> None:
        self.out(
            "Usage:\r\nstorage <cmd> <path> <args>\r\n"
            "The path must start with /int or /ext\r\nCmd list:\r\n"
            "\tinfo\t - get FS info\r\n"
            "\tformat\t - format filesystem\r\n"
            "\tlist\t - list files and dirs\r\n"
            "\ttree\t - list files and dirs, recursive\r\n"
            "\tremove\t - delete the file or directory\r\n"
            "\tread\t - read text from file and print file size and content to cli\r\n"
            "\tread_chunks\t - read data from file and print file size and content to cli, "
            "<args> should contain how many bytes you want to read in block\r\n"
            "\twrite\t - read text from cli and append it to file, stops by ctrl+c\r\n"
            "\twrite_chunk\t - read data from cli and append it to file, "
            "<args> should contain how many bytes you want to write\r\n"
            "\tcopy\t - copy file to new file, <args> must contain new path\r\n"
            "\trename\t - move file to new file, <args> must contain new path\r\n"
            "\tmkdir\t - creates a new directory\r\n"
            "\tmd5\t - md5 hash of the file\r\n"
            "\tstat\t - info about file or dir\r\n"
            "\ttimestamp\t - last modification timestamp\r\n"
        )

    def _resolve(self, path: str) -> str:
        """Storage path check: /int, /ext or /any (-> /ext with an SD card), no trailing slash."""
        if len(path) > 1:
            path = path.rstrip("/")
        storage = self._storage_of(path)
        if storage == "/ext" and not self.state.sd_card:
            raise FsError(FSE_NOT_READY)
        return storage + path[4:]

    def _file(self, path: str) -> tuple[str, bytes]:
        resolved = self._resolve(path)
        if resolved not in self.state.files:
            raise FsError(FSE_NOT_EXIST)
        data = self.state.files[resolved]
        if data is None:
            raise FsError(FSE_NOT_EXIST)
        return resolved, data

    def _error(self, exc: FsError) -> None:
        self.out(f"Storage error: {exc.desc}\r\n")

    def cmd_storage(self, args: str) -> None:
        sub, rest = read_word(args)
        if not sub:
            self._storage_usage()
            return
        path, rest = read_quoted(rest)
        if not path:
            self._storage_usage()
            return
        handlers: dict[str, Callable[[str, str], None]] = {
            "info": self._storage_info,
            "format": self._storage_format,
            "list": self._storage_list,
            "tree": self._storage_tree,
            "read": self._storage_read,
            "read_chunks": self._storage_read_chunks,
            "write": self._storage_write,
            "write_chunk": self._storage_write_chunk,
            "copy": self._storage_copy,
            "remove": self._storage_remove,
            "rename": self._storage_rename,
            "mkdir": self._storage_mkdir,
            "md5": self._storage_md5,
            "stat": self._storage_stat,
            "timestamp": self._storage_timestamp,
        }
        handler = handlers.get(sub)
        if handler is None:
            self._storage_usage()
            return
        try:
            handler(path, rest)
        except FsError as exc:
            self._error(exc)

    def _storage_info(self, path: str, rest: str) -> None:
        s = self.state
        if path == "/int":
            self.out(
                f"Label: {s.name}\r\nType: LittleFS\r\n{s.int_total_bytes // 1024}KiB total\r\n"
                f"{s.int_free_bytes() // 1024}KiB free\r\n"
            )
        elif path == "/ext":
            if not s.sd_card:
                raise FsError(FSE_NOT_READY)
            mid, oem, product, major, minor, serial, month, year = s.sd_id
            self.out(
                f"Label: {s.sd_label}\r\nType: {s.sd_fs_type}\r\n{s.sd_total_kib}KiB total\r\n"
                f"{s.sd_free_kib()}KiB free\r\n{mid:02x}{oem} {product} v{major}.{minor}\r\n"
                f"SN:{serial:04x} {month:02d}/{year}\r\n"
            )
        else:
            self._storage_usage()

    def _storage_format(self, path: str, rest: str) -> None:
        if path == "/int":
            raise FsError(FSE_NOT_IMPLEMENTED)
        if path != "/ext":
            self._storage_usage()
            return
        self.out("Formatting SD card, All data will be lost! Are you sure (y/n)?\r\n")
        answer = self.getc(None)
        if answer in (ord("y"), ord("Y")):
            self.out("Formatting, please wait...\r\n")
            for key in [p for p in self.state.files if p.startswith("/ext/")]:
                del self.state.files[key]
            self.state.touch("/ext")
            self.out("SD card was successfully formatted.\r\n")
        else:
            self.out("Cancelled.\r\n")

    def _storage_list(self, path: str, rest: str) -> None:
        if path == "/":
            self.out("\t[D] int\r\n\t[D] ext\r\n\t[D] any\r\n")
            return
        directory = self._resolve(path)
        if directory not in self.state.files:
            raise FsError(FSE_NOT_EXIST)
        if self.state.files[directory] is not None:
            raise FsError(FSE_NOT_EXIST)  # opening a file as a directory fails like a missing one
        entries = self.state.children(directory)
        if not entries:
            self.out("\tEmpty\r\n")
            return
        self.out("".join(self._entry(p, p.rsplit("/", 1)[1]) for p in entries))

    def _entry(self, path: str, shown: str) -> str:
        data = self.state.files[path]
        if data is None:
            return f"\t[D] {shown}\r\n"
        return f"\t[F] {shown} {len(data)}b\r\n"

    def _storage_tree(self, path: str, rest: str) -> None:
        roots = ["/int", "/ext"] if path == "/" else [path]
        for root in roots:
            try:
                directory = self._resolve(root)
                if self.state.files.get(directory, b"") is not None:
                    raise FsError(FSE_NOT_EXIST)
            except FsError as exc:
                self._error(exc)
                continue
            lines = self._walk(directory)
            self.out("".join(lines) if lines else "\tEmpty\r\n")

    def _walk(self, directory: str) -> list[str]:
        """``dir_walk``: depth first, full paths."""
        lines: list[str] = []
        for child in self.state.children(directory):
            lines.append(self._entry(child, child))
            if self.state.files[child] is None:
                lines += self._walk(child)
        return lines

    def _storage_read(self, path: str, rest: str) -> None:
        _, data = self._file(path)
        self.out(f"Size: {len(data)}\r\n".encode() + data + b"\r\n")

    def _storage_read_chunks(self, path: str, rest: str) -> None:
        sizes = scan_uints(rest, 1)
        if not sizes:
            self._storage_usage()
            return
        _, data = self._file(path)
        chunk = sizes[0]
        self.out(f"Size: {len(data)}\r\n")
        if chunk:
            offset = 0
            while offset < len(data):
                self.out("\r\nReady?\r\n")
                self.getc(None)
                self.out(data[offset : offset + chunk])
                offset += chunk
        self.out("\r\n")

    def _writable(self, path: str) -> str:
        resolved = self._resolve(path)
        if self.state.files.get(parent_of(resolved), b"") is not None:
            raise FsError(FSE_NOT_EXIST)
        if resolved in self.state.files and self.state.files[resolved] is None:
            raise FsError(FSE_DENIED)
        return resolved

    def _storage_write(self, path: str, rest: str) -> None:
        """``storage_cli_write``: text appended until Ctrl+C. The firmware writes each full
        512-byte block as it fills and looks at Ctrl+C only with a partly filled block: a Ctrl+C
        that comes first, or right after a full block, is taken as text and echoed."""
        resolved = self._writable(path)
        self.state.touch(resolved)  # opened for writing: the storage's timestamp moves
        self.out("Just write your text data. New line by Ctrl+Enter, exit by Ctrl+C.\r\n")
        typed = bytearray()
        while True:
            byte = self.getc(None)
            if byte is None:  # pragma: no cover - getc(None) always returns a byte
                continue
            if byte == ETX and len(typed) % WRITE_BLOCK:
                break
            typed.append(byte)
            self.out(bytes([byte]))
        self.state.files[resolved] = (self.state.files.get(resolved) or b"") + bytes(typed)
        self.state.touch(resolved)
        self.out("\r\n")

    def _storage_write_chunk(self, path: str, rest: str) -> None:
        sizes = scan_uints(rest, 1)
        if not sizes:
            self._storage_usage()
            return
        resolved = self._writable(path)
        self.state.touch(resolved)
        self.out("Ready\r\n")
        received = bytearray()
        while len(received) < sizes[0]:
            byte = self.getc(None)
            if byte is not None:
                received.append(byte)
        self.state.files[resolved] = (self.state.files.get(resolved) or b"") + bytes(received)
        self.state.touch(resolved)

    def _storage_copy(self, path: str, rest: str) -> None:
        target, _ = read_quoted(rest)
        if not target:
            self._storage_usage()
            return
        _, data = self._file(path)
        destination = self._writable(target)
        if destination in self.state.files:
            raise FsError(FSE_EXIST)
        self.state.files[destination] = data
        self.state.touch(destination)

    def _storage_rename(self, path: str, rest: str) -> None:
        target, _ = read_quoted(rest)
        if not target:
            self._storage_usage()
            return
        source = self._resolve(path)
        if source not in self.state.files:
            raise FsError(FSE_NOT_EXIST)
        destination = self._writable(target)
        if destination in self.state.files:
            raise FsError(FSE_EXIST)
        moved = {
            p: d for p, d in self.state.files.items() if p == source or p.startswith(source + "/")
        }
        for old, data in moved.items():
            del self.state.files[old]
            self.state.files[destination + old[len(source) :]] = data
        self.state.touch(source)
        self.state.touch(destination)

    def _storage_remove(self, path: str, rest: str) -> None:
        resolved = self._resolve(path)
        if resolved in ("/int", "/ext"):
            raise FsError(FSE_DENIED)
        if resolved not in self.state.files:
            raise FsError(FSE_NOT_EXIST)
        if self.state.files[resolved] is None and self.state.children(resolved):
            raise FsError(FSE_DENIED)
        del self.state.files[resolved]
        self.state.touch(resolved)

    def _storage_mkdir(self, path: str, rest: str) -> None:
        resolved = self._resolve(path)
        if resolved in self.state.files:
            raise FsError(FSE_EXIST)
        if self.state.files.get(parent_of(resolved), b"") is not None:
            raise FsError(FSE_NOT_EXIST)
        self.state.files[resolved] = None
        self.state.touch(resolved)

    def _storage_md5(self, path: str, rest: str) -> None:
        _, data = self._file(path)
        self.out(hashlib.md5(data).hexdigest() + "\r\n")

    def _storage_stat(self, path: str, rest: str) -> None:
        if path == "/":
            self.out("Storage\r\n")
            return
        resolved = self._resolve(path)
        if resolved == "/int":
            total, free = self.state.int_total_bytes // 1024, self.state.int_free_bytes() // 1024
            self.out(f"Storage, {total}KiB total, {free}KiB free\r\n")
        elif resolved == "/ext":
            total, free = self.state.sd_total_kib, self.state.sd_free_kib()
            self.out(f"Storage, {total}KiB total, {free}KiB free\r\n")
        elif resolved not in self.state.files:
            raise FsError(FSE_NOT_EXIST)
        elif (data := self.state.files[resolved]) is None:
            self.out("Directory\r\n")
        else:
            self.out(f"File, size: {len(data)}b\r\n")

    def _storage_timestamp(self, path: str, rest: str) -> None:
        """``storage_common_timestamp``: the timestamp of the storage the path is on, for any
        path under a valid prefix (the file need not exist)."""
        try:
            storage = self._storage_of(path)
        except FsError:
            self.out("Invalid arguments\r\n")
            return
        self.out(f"Timestamp {self.state.stamp(storage)}\r\n")

    def _storage_of(self, path: str) -> str:
        """``storage_get_data``: ``/int`` or ``/ext`` for a path under ``/int``, ``/ext`` or
        ``/any`` (the card when it is there); invalid name for any other. The card need not be
        in for ``/ext``: only ``/any`` looks."""
        root = path[:4]
        if root not in ("/int", "/ext", "/any") or (len(path) > 4 and path[4] != "/"):
            raise FsError(FSE_INVALID_NAME)
        if root == "/any":
            return "/ext" if self.state.sd_card else "/int"
        return root
