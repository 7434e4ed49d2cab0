"""WAV files written byte by byte for the command tests (Python standard library only): the
header polyrx reads, built from its definition, so that a reader bug cannot hide in a writer.

    from wav_file import fmt_chunk, riff, write_wav
    write_wav(path, tag, bits, data)      # tag 1: PCM, 3: IEEE float; one data chunk
    riff(path, fmt_chunk(1, 2, rate, 16) + chunks)   # any chunks after "WAVE"
"""
import struct


def chunk(cid, body, size=None):
    """A chunk: its id, its size (the body's unless given) and the body."""
    return cid + struct.pack("<I", len(body) if size is None else size) + body


def fmt_chunk(tag, channels, rate, bits):
    """A fmt chunk of 16 bytes: format tag, channels, rate, byte rate, block align, bits."""
    align = channels * bits // 8
    return chunk(b"fmt ", struct.pack("<HHIIHH", tag, channels, rate, rate * align, align, bits))


def riff(path, chunks):
    """A RIFF/WAVE file holding the chunks (bytes) after "WAVE"."""
    body = b"WAVE" + chunks
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", len(body)) + body)


def write_wav(path, tag, bits, data, rate=96000, channels=2, chunks=b"", size=None):
    """fmt, the extra chunks, then one data chunk (its size field `size` where given)."""
    riff(path, fmt_chunk(tag, channels, rate, bits) + chunks + chunk(b"data", data, size))
