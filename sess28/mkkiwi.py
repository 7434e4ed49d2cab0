import struct, sys, math
src, dst, rate, drop = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
d = open(src, 'rb').read()
parts = [b'fmt ', struct.pack('<I', 16), struct.pack('<HHIIHH', 1, 2, int(rate + 0.5), int(rate + 0.5) * 4, 4, 16)]
tow0 = 5 * 86400 + 11 * 3600 + 22 * 60 + 51
n = len(d) // 4
for c, first in enumerate(range(0, n, 512)):
    t = 0.25 + first / rate
    w = math.floor(t)
    ns = round((t - w) * 1e9)
    if c != drop:
        chunk = d[first * 4:(first + 512) * 4]
        parts += [b'kiwi', struct.pack('<IBBII', 10, 0, 0, (tow0 + w) % 604800, ns), b'data', struct.pack('<I', len(chunk)), chunk]
body = b''.join(parts)
open(dst, 'wb').write(b'RIFF' + struct.pack('<I', len(body) + 4) + b'WAVE' + body)
