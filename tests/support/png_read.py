"""Decodes an 8-bit RGB PNG (Python standard library only: zlib) for the picture tests: pixels,
size and the tEXt chunks (polyrx:plot_area, polyrx:x_range, polyrx:y_range, ...).

    from png_read import read_png
    w, h, px, text = read_png(path)   # px(x, y) -> (r, g, b)
"""
import struct
import zlib

FG = (0xD8, 0xDD, 0xE3)  # axes and labels
BG = (0x10, 0x14, 0x18)  # background


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, text, w, h = 8, b"", {}, 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        assert zlib.crc32(kind + body) == struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0], "CRC"
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype == 2, "not 8-bit RGB"
        elif kind == b"IDAT":
            idat += body
        elif kind == b"tEXt":
            k, v = body.split(b"\0", 1)
            text[k.decode()] = v.decode()
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), 3 * w, [], bytearray(3 * w)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, (lambda x, y: tuple(rows[y][3 * x:3 * x + 3])), text


def frame_ok(px, x0, y0, pw, ph):
    """The axes' frame: one pixel outside the plot area on all four sides."""
    return all(px(x, y0 - 1) == FG and px(x, y0 + ph) == FG for x in range(x0, x0 + pw)) and \
        all(px(x0 - 1, y) == FG and px(x0 + pw, y) == FG for y in range(y0, y0 + ph))


def inked(px, xa, ya, xb, yb):
    """Pixels that are not background in [xa, xb) x [ya, yb)."""
    return sum(px(x, y) != BG for y in range(ya, yb) for x in range(xa, xb))
