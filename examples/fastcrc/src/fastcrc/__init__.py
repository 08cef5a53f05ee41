"""CRC-32 (IEEE 802.3, as zlib.crc32) and Adler-32 (as zlib.adler32) of bytes, in C."""

from fastcrc._crc import adler32, crc32

__all__ = ["adler32", "crc32"]
__version__ = "0.1.0"
