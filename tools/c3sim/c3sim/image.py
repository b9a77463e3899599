"""The ESP32-C3 flash image as the ROM loader reads it (esptool's "Firmware Image
Format", the one tools/xtask/src/esp_image.rs writes): the 8-byte header (magic 0xE9,
segment count, flash mode/size/frequency, entry), the 16-byte extended header (chip id
5 = ESP32-C3, hash-appended flag), each segment as load address, length and bytes,
padding to one byte short of a multiple of 16, the XOR checksum seeded 0xEF, and the
SHA-256 of everything before it. Parsing only: it never touches the emulator.
"""

import hashlib
import struct

MAGIC = 0xE9
CHIP_ID_ESP32C3 = 5
CHECKSUM_SEED = 0xEF
HEADER_BYTES = 24
MAX_SEGMENTS = 16


class ImageError(Exception):
    """An image the ROM loader would refuse, with the reason."""


def parse(data):
    """Returns (entry, [(load address, bytes)]) or raises ImageError."""
    if len(data) < HEADER_BYTES:
        raise ImageError(f"{len(data)} bytes: shorter than the 24-byte header")
    magic, count, _mode, _size_freq, entry = struct.unpack_from("<BBBBI", data, 0)
    if magic != MAGIC:
        raise ImageError(f"magic {magic:#04x}, expected {MAGIC:#04x}")
    if count == 0 or count > MAX_SEGMENTS:
        raise ImageError(f"{count} segments: the ROM loads 1 to {MAX_SEGMENTS}")
    chip_id = struct.unpack_from("<H", data, 12)[0]
    if chip_id != CHIP_ID_ESP32C3:
        raise ImageError(f"chip id {chip_id}, expected {CHIP_ID_ESP32C3} (ESP32-C3)")
    hash_appended = data[23]
    offset = HEADER_BYTES
    checksum = CHECKSUM_SEED
    segments = []
    for i in range(count):
        if offset + 8 > len(data):
            raise ImageError(f"segment {i}: header past the end of the image")
        addr, length = struct.unpack_from("<II", data, offset)
        offset += 8
        if offset + length > len(data):
            raise ImageError(
                f"segment {i} at {addr:#010x}: {length} bytes, past the end of the image"
            )
        body = bytes(data[offset : offset + length])
        offset += length
        for b in body:
            checksum ^= b
        segments.append((addr, body))
    offset += 15 - offset % 16
    if offset >= len(data):
        raise ImageError("no checksum byte after the segments")
    if data[offset] != checksum:
        raise ImageError(
            f"checksum {data[offset]:#04x} at offset {offset}, computed {checksum:#04x}"
        )
    offset += 1
    if hash_appended:
        digest = bytes(data[offset : offset + 32])
        if len(digest) != 32:
            raise ImageError("SHA-256 missing at the end of the image")
        computed = hashlib.sha256(data[:offset]).digest()
        if digest != computed:
            raise ImageError(
                f"SHA-256 {digest.hex()} does not match the image's {computed.hex()}"
            )
    return entry, segments
