#!/usr/bin/env python3
"""Write the committed test image tests/data/images/rgb_128x96.png.

Standard library only (zlib + struct), so it runs anywhere and the bytes are
deterministic. 128 wide x 96 high, 8-bit RGB, no alpha, no interlace: both
sides are multiples of patch (16) x spatial merge (2) = 32, so Qwen2-VL's smart
resize is the identity for it (given min_pixels <= 128*96 <= max_pixels).

The content is smooth gradients plus a few hard edges and a checker block, so
a swapped axis, a flipped channel or an off-by-one patch shows up in the
embeddings. Usage: python3 make_png.py OUT.png
"""
import math
import struct
import sys
import zlib

WIDTH, HEIGHT = 128, 96


def pixel(x, y):
    r = (x * 255) // (WIDTH - 1)
    g = (y * 255) // (HEIGHT - 1)
    b = int(127.5 + 127.5 * math.sin((x + 2 * y) / 9.0))
    if 40 <= x < 72 and 16 <= y < 48 and ((x // 4 + y // 4) % 2 == 0):
        r, g, b = 255 - r, 255 - g, 0              # checker block
    if (x - 100) ** 2 + (y - 70) ** 2 < 15 ** 2:
        r, g, b = 250, 250, 250                    # bright disc
    if y == 5 or x == 9:
        r, g, b = 0, 0, 0                          # thin dark lines
    return r, g, b


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def main():
    out = sys.argv[1]
    rows = bytearray()
    for y in range(HEIGHT):
        rows.append(0)                             # filter: none
        for x in range(WIDTH):
            rows.extend(pixel(x, y))
    png = b"\x89PNG\r\n\x1a\n"
    png += chunk(b"IHDR", struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(bytes(rows), 9))
    png += chunk(b"IEND", b"")
    with open(out, "wb") as f:
        f.write(png)


if __name__ == "__main__":
    main()
