#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/), a few KB in all.

The binary targets (iq_reader, chan_config, sim_config) decode their input with the readers of
tests/fuzz/fuzz.h; the encoders below mirror them so that each seed decodes to the configuration
its name says. Run from the repository root: python3 tests/fuzz/make_seeds.py
"""
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- encoders mirroring fuzz.h ----
def u8(v):
    return struct.pack("<B", v)


def u16(v):
    return struct.pack("<H", v)


def u32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def dbl(v, lo, hi):
    """fuzz_double in its sane range: the u16 fraction nearest to v."""
    f = round((v - lo) / (hi - lo) * 65535)
    return u8(255) + u16(max(0, min(65535, f)))


def dbl_special(i):
    """fuzz_double's special value i (0 0, 1 -0, 2 NaN, 3 inf, 4 -inf, 5 DBL_MAX, ...)."""
    return u8(0) + u8(i)


def dbl_raw(v):
    return u8(16) + struct.pack("<d", v)


def uint(v, lo, hi):
    return u8(255) + u32(v - lo)


def uint_raw(v):
    return u8(16) + u32(v)


def sint(v, lo, hi):
    return u8(255) + u32(v - lo)


# ---- sigmf_meta: JSON texts ----
def sigmf():
    put("sigmf_meta", "minimal.json",
        '{"global":{"core:datatype":"cf32_le"},"captures":[]}')
    put("sigmf_meta", "full.json", """{
  "global": {
    "core:datatype": "ci16_le",
    "core:sample_rate": 6553600,
    "core:version": "1.0.0",
    "core:num_channels": 1,
    "core:description": "shortwave \\u00e9 \\"quoted\\"",
    "core:extensions": [{"name": "polyrx", "version": "0.1.0", "optional": true}],
    "polyrx:channels": 1024
  },
  "captures": [{"core:sample_start": 0, "core:frequency": 7.1e6, "core:header_bytes": 512,
                "core:datetime": "2026-11-29T12:00:00Z"},
               {"core:sample_start": 1000000, "core:frequency": -1.5e-3}],
  "annotations": [{"core:sample_start": 0, "core:sample_count": 100, "core:label": "x"}]
}
""")
    put("sigmf_meta", "dataset.json",
        '{"global":{"core:datatype":"cu8","core:sample_rate":2.4e6,"core:dataset":"rtl.bin"},'
        '"captures":[{"core:sample_start":0}]}\n')
    put("sigmf_meta", "ci8.json",
        '{"global":{"core:datatype":"ci8","core:sample_rate":1e3},"captures":[{}]}')
    put("sigmf_meta", "bigendian.json",
        '{"global":{"core:datatype":"cf32_be"},"captures":[]}')
    put("sigmf_meta", "real.json",
        '{"global":{"core:datatype":"ri16_le","core:sample_rate":48000},"captures":[]}')
    put("sigmf_meta", "metadata_only.json",
        '{"global":{"core:datatype":"cf32_le","core:metadata_only":true},"captures":[]}')
    put("sigmf_meta", "channels.json",
        '{"global":{"core:datatype":"cf32_le","core:num_channels":2},"captures":[]}')
    put("sigmf_meta", "bad_rate.json",
        '{"global":{"core:datatype":"cf32_le","core:sample_rate":-1},"captures":[]}')
    put("sigmf_meta", "bad_json.json", '{"global":{"core:datatype":"cf32_le",},"captures":[')
    put("sigmf_meta", "trailing.json",
        '{"global":{"core:datatype":"cf32_le"},"captures":[]} x')
    put("sigmf_meta", "nested.json", "[" * 40 + "]" * 40)
    put("sigmf_meta", "datatype.txt", "ci16_le")
    put("sigmf_meta", "format_name.txt", "CF32")


# ---- iq_reader: mode, read size, writer seed, then the stream ----
def iq():
    stream = bytes((i * 73 + 11) & 0xFF for i in range(61))  # 61: no format divides it
    for fmt, name in enumerate(["cf32", "ci16", "ci8", "cu8"]):
        put("iq_reader", f"{name}_file_exact", u8(fmt) + u8(3) + u8(0) + stream[:48])
        put("iq_reader", f"{name}_pipe_cut", u8(fmt | 4 | 8) + u8(5) + u8(fmt * 17) + stream)
    put("iq_reader", "cf32_file_vary_cut", u8(8) + u8(0) + u8(0) + stream[:23])
    put("iq_reader", "ci16_pipe_long", u8(1 | 4) + u8(64) + u8(99) + stream * 8)
    put("iq_reader", "empty_stream", u8(4) + u8(1) + u8(1))


# ---- chan_list: K selector (+ K), then the text ----
def chan_list():
    put("chan_list", "mixed", u8(0) + u8(255) + b"3,7,100-120")  # K = 256
    put("chan_list", "single", u8(0) + u8(15) + b"0")
    put("chan_list", "range_k16", u8(200) + u16(15) + b"0-15")
    put("chan_list", "beyond_k", u8(0) + u8(9) + b"1,10")
    put("chan_list", "reversed", u8(0) + u8(99) + b"9-3")
    put("chan_list", "bad_sep", u8(0) + u8(99) + b"1;2,,3-")
    put("chan_list", "huge_k", u8(255) + u32(0xFFFFFFFF) + b"4294967294,00012,18446744073709551616")
    put("chan_list", "k_zero", u8(255) + u32(0) + b"0")


# ---- cli_numbers: range selector, then the text ----
def cli_numbers():
    texts = ["6.5536M", "12.8k", "2.4e3", "50u", "1G", "4096", "1.5k", "0.25", "-3.5m",
             "1e400", "nan", "inf", "12kk", "7 ", "0x1p4", "1e-320", "100000000000T"]
    for i, t in enumerate(texts):
        put("cli_numbers", f"n{i:02d}", u8(i % 7) + t.encode())
    put("cli_numbers", "own_range", u8(7) + u64(5) + u64(100) + b"64")


# ---- chan_config ----
def chan_cfg(K, dec_sel, P=16, atten=80, cutoff=0.5, taps=None, select=None, in_fmt=0,
             out_cf32=True, fs=1e6, fc=0, threads=1, block=None, n_in_word=300, extra=0, pick=77,
             payload=b""):
    flags = (1 if taps is not None else 0) | (2 if select is not None else 0)
    b = u8(flags) + uint(K, 1, 64) + u8(dec_sel) + uint(P, 1, 24)
    b += dbl(atten, 10, 150) + dbl(cutoff, 0.05, 1.5)
    if taps is not None:
        b += u8(255) + u16(len(taps) - 1) + u8(255)
        b += b"".join(u16(int(round(t * 32768)) & 0xFFFF) for t in taps)
    if select is not None:
        b += u8(len(select)) + b"".join(uint(s, 0, K - 1) for s in select)
    b += u8(in_fmt) + u8(0 if out_cf32 else 230)
    b += dbl(fs, 1, 1e9) + dbl(fc, -1e9, 1e9) + sint(threads, 1, 2) + u8(0) + u32(7)
    b += u8(0) if block is None else u8(200) + u16(block - 1)
    b += u16(n_in_word) + u8(extra) + u16(pick) + payload
    return b


def chan_config():
    noise = bytes((i * 151 + 7) & 0xFF for i in range(96))
    put("chan_config", "k16_os2_cf32", chan_cfg(16, 0, payload=noise))
    put("chan_config", "k8_crit_ci16", chan_cfg(8, 4, P=8, in_fmt=1, payload=noise))
    put("chan_config", "k32_sel_ci8", chan_cfg(32, 0, select=[0, 31, 5, 5], in_fmt=2,
                                                payload=noise))
    put("chan_config", "k4_taps_cu8", chan_cfg(4, 6, taps=[0.1, 0.2, 0.4, 0.2, 0.1, -0.05],
                                               in_fmt=3, payload=noise))
    put("chan_config", "k1_crit", chan_cfg(1, 4, P=3, payload=noise))
    put("chan_config", "k64_block", chan_cfg(64, 0, P=4, block=100, threads=2, payload=noise))
    put("chan_config", "odd_k", chan_cfg(7, 0))
    put("chan_config", "cf16_cpu", chan_cfg(8, 0, out_cf32=False))
    put("chan_config", "bad_cutoff", chan_cfg(2, 0, cutoff=1.5))
    # an absurd K (fuzz_uint raw) and NaN attenuation
    b = u8(0) + uint_raw(0xFFFFFFF0) + u8(0) + uint(16, 1, 24) + dbl_special(2) + dbl(0.5, 0.05,
                                                                                        1.5)
    put("chan_config", "absurd_k_nan", b)


# ---- sim_config ----
def carrier(sps=8, fr=0.1, rolloff=0.35, span=12, power=0, phase=0.5, timing=0.25, ppm=20,
            diff=0, pilots=None, seed=None):
    b = dbl(sps, 2, 40) + dbl(fr, -0.5, 0.5) + dbl(rolloff, 0.05, 1) + uint(span, 2, 12)
    b += dbl(power, -30, 10) + dbl(phase, -7, 7) + dbl(timing, 0, 0.999) + dbl(ppm, -300, 300)
    b += sint(diff, 0, 1)
    if pilots is None:
        b += u8(0)
    else:
        period, length = pilots
        b += u8(200) + u8(period - 2) + u8(length - 1)
    b += u8(0) if seed is None else u8(200) + u64(seed)
    return b


def sim_cfg(n_car, carriers, fs=1e6, noise=0, esn0=20, threads=1, n1=1000, n2=500):
    b = u8(n_car) + dbl(fs, 1e3, 1e7)
    for c in carriers:
        b += c
    for _ in range(3 - len(carriers)):
        b += carrier()
    b += sint(noise, 0, 1) + dbl(esn0, -10, 40) + u64(12345) + sint(threads, 1, 2)
    b += u16(n1) + u16(n2)
    return b


def sim_config():
    put("sim_config", "one_plain", sim_cfg(1, [carrier()]))
    put("sim_config", "one_noise_diff", sim_cfg(1, [carrier(diff=1, seed=99)], noise=1))
    put("sim_config", "three_pilots", sim_cfg(3, [carrier(sps=4, fr=-0.3),
                                                  carrier(sps=2.5, fr=0.2, pilots=(32, 8)),
                                                  carrier(sps=39, fr=0.45, span=12, power=-20)],
                                              threads=2, n1=2999, n2=2999))
    put("sim_config", "symbol_major", sim_cfg(1, [carrier(sps=40, rolloff=1.0, span=2)],
                                              fs=1e7, n1=100, n2=2900))
    put("sim_config", "sps2_ppm", sim_cfg(1, [carrier(sps=2, ppm=300)]))


def finite():
    # byte 0 also picks the offset; the rest are float32 pairs
    one, nan, inf = struct.pack("<f", 1.0), u32(0x7FC00000), struct.pack("<f", float("inf"))
    put("finite", "all_finite", b"\x00" + one * 15)
    put("finite", "nan_inf_mixed", b"\x01" + one + nan + inf + one + struct.pack("<f", -float("inf"))
        + one * 3 + u32(0x7F800001))
    put("finite", "every_byte", bytes(range(256)))


def cli_paths():
    # byte 0: entries; then one byte each: vocabulary index (low 7 bits), input (bit 7)
    put("cli_paths", "output_is_input", bytes([3, 0, 0x86, 6]))
    put("cli_paths", "spellings_of_a", bytes([4, 0x80, 1, 9, 15]))
    put("cli_paths", "links_and_stdout", bytes([5, 4, 5, 9, 10, 16]))
    put("cli_paths", "shared_device", bytes([6, 15, 15, 16, 17, 13, 14]))
    put("cli_paths", "through_a_file", bytes([2, 19, 7]))


if __name__ == "__main__":
    sigmf()
    iq()
    chan_list()
    cli_numbers()
    chan_config()
    sim_config()
    finite()
    cli_paths()
