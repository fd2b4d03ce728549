"""Event files as text: compression told from the first bytes, decoded lines block by block.

What the careful JSON-lines reader (``ingest.jsonl``) reads through: a BOM is
skipped at the start of a file only; bad UTF-8 and a broken gzip / zstd
stream become located TraceErrors, always after the whole lines before them
were handed out (so an earlier bad line is still the one reported).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from .errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
BOM = b"\xef\xbb\xbf"  # UTF-8 byte order mark: skipped at the start of a file, an error anywhere else
_BLOCK = 1 << 22


def detect_compression(path: str | Path) -> str | None:
    """'gzip', 'zstd' or None, from the file's first bytes (the extension is not trusted)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise TraceError(path, "", f"cannot read: {e.strerror or e}") from None
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


class _StreamBroken(Exception):
    """A read of the (de)compressed stream failed: why, and how far into the file it had read."""

    def __init__(self, reason: str, read_to: int):
        super().__init__(reason)
        self.reason, self.read_to = reason, read_to


def _blocks(path: Path, compression: str | None):
    try:
        raw = pa.OSFile(str(path))
        stream = raw if compression is None else pa.CompressedInputStream(raw, compression)
    except (OSError, pa.ArrowException) as e:
        raise TraceError(path, "", f"cannot open: {e}") from None
    with stream:
        while True:
            try:
                block = stream.read(_BLOCK)
            except (OSError, pa.ArrowException, EOFError) as e:
                raise _StreamBroken(str(e), raw.tell()) from None
            if not block:
                return
            yield block


def _broken(path: Path, compression: str | None, err: _StreamBroken, last_good_line: int) -> TraceError:
    what = f"{compression} data" if compression else "file"
    size = path.stat().st_size
    # The raw reader reads ahead, so the offset bounds where the damage is, not the exact byte.
    return TraceError(path, f"line {last_good_line + 1}",
                      f"corrupt or truncated {what} after line {last_good_line} (the stream fails by "
                      f"compressed byte {err.read_to} of {size}): {err.reason}")


def line_lists(path: Path, compression: str | None):
    """Lists of decoded lines, block by block; the last may be an unterminated line."""
    tail = b""
    first = 1  # line number of the block's first line, for decode errors
    blocks = _blocks(path, compression)
    while True:
        try:
            block = next(blocks)
        except StopIteration:
            break
        except _StreamBroken as e:
            # Every whole line before the damage was yielded (and checked) already.
            raise _broken(path, compression, e, first - 1) from None
        if first == 1 and not tail and block.startswith(BOM):
            block = block[len(BOM):]  # a BOM opening the file is accepted (and only there), as by the fast path
        buf = tail + block
        cut = buf.rfind(b"\n") + 1
        tail = buf[cut:]
        yield from _decode(path, buf[:cut], first)
        first += buf.count(b"\n", 0, cut)
    if tail:
        yield from _decode(path, tail + b"\n", first)


def _decode(path: Path, data: bytes, first: int):
    """The lines of ``data`` (whole lines), as one list; on bad UTF-8 the lines
    before it first, so an earlier bad line is still the one reported."""
    try:
        yield data.decode("utf-8").split("\n")[:-1]
        return
    except UnicodeDecodeError as e:
        start = data.rfind(b"\n", 0, e.start) + 1
        reason = e.reason
    yield data[:start].decode("utf-8").split("\n")[:-1]
    line = first + data.count(b"\n", 0, start)
    raise TraceError(path, f"line {line}", f"not valid UTF-8 text: {reason}")
