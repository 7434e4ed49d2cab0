#!/usr/bin/env python3
"""A study for issue 11's data flow (not part of the build): how much accuracy a 4th-power CFO
estimate loses when it is taken before the timing is known.

The demodulator estimates the CFO from x^4 of the pre-filtered signal at the timing instants
(src/qpsk/qpsk_internal.h: w), so the GPU bank must write the pre-filter's grid in its first pass
and read it again after the timing pass (pre_om, then x4: ~670 MB of the span's ~1.68 GB,
bench/GPU_NOTES.md "Thirteenth session: the bank's bytes"). An estimate that needs no timing could
be made from the first pass's own pre-filter outputs. Compared here, on the same noisy signals
(QPSK, RRC 0.35 at 4 samples a symbol, 8192 symbols, CFO uniform in +-0.1 cycles a symbol, a
random fractional delay), with the same spectral peak search (4x zero-padded FFT, parabolic
refinement):
  A  x^4 at the true symbol instants (the ideal of today's design),
  B  x^4 at every sample, summed over each symbol's 4 samples (needs no timing),
  C  x^4 at the sample phase whose line is strongest (needs a choice, not the timing).
Prints the RMS and largest errors in cycles a symbol. Needs numpy only.

With --dc A (the eighteenth session's question): the input carries a DC offset of A times the
signal's RMS amplitude (a receiver's LO leak), which the demodulator takes out before x^4 (qpsk
stage om: the grid less the span's DC). The GPU's first pass (pre_om) runs before the span's DC
is known, so a timing-free estimate made there would have to take:
  B0 x^4 of the pre-filter with its DC in (no DC known),
  B1 x^4 with the span's own DC out (the DC known: a pass before, or today's order),
  B2 x^4 with the previous span's DC out, the DC having moved by --dc-drift of itself since,
  B3 the four extra sums a symbol of the expanded (p - D)^4 (p^3, p^2, p and 1 with the
     binomial weights, combined once D is known): B1's value exactly, for 4 more rows a symbol.
B3 is printed as the largest difference from B1 (rounding only).
"""
import argparse

import numpy as np


def rrc(beta, sps, span):
    t = np.arange(-span * sps / 2, span * sps / 2 + 1) / sps
    h = np.empty_like(t)
    for i, x in enumerate(t):
        if abs(x) < 1e-9:
            h[i] = 1 - beta + 4 * beta / np.pi
        elif abs(abs(4 * beta * x) - 1) < 1e-9:
            h[i] = beta / np.sqrt(2) * ((1 + 2 / np.pi) * np.sin(np.pi / (4 * beta)) +
                                        (1 - 2 / np.pi) * np.cos(np.pi / (4 * beta)))
        else:
            h[i] = (np.sin(np.pi * x * (1 - beta)) + 4 * beta * x * np.cos(np.pi * x * (1 + beta))) / (
                np.pi * x * (1 - (4 * beta * x) ** 2))
    return h / np.sqrt(np.sum(h * h))


def peak(y, pad=4):
    """The strongest line of y, in cycles a sample, refined by a parabola through the peak."""
    Y = np.abs(np.fft.fft(y, pad * len(y)))
    k = int(np.argmax(Y))
    a, b, c = Y[k - 1], Y[k], Y[(k + 1) % len(Y)]
    f = (k + 0.5 * (a - c) / (a - 2 * b + c)) / len(Y)
    return f - 1 if f > 0.5 else f


def signal(rng, N, sps, htx, esn0):
    """N random QPSK symbols shaped by htx at sps samples a symbol, delayed by a random fraction
    tau of a sample, at a random CFO nu (cycles a symbol, +-0.1), in AWGN at esn0 dB: the noisy
    samples, nu, tau and the clean signal's RMS amplitude."""
    nu, tau = rng.uniform(-0.1, 0.1), rng.uniform(0, 1)
    sym = (rng.integers(0, 2, N) * 2 - 1 + 1j * (rng.integers(0, 2, N) * 2 - 1)) / np.sqrt(2)
    up = np.zeros(N * sps, complex)
    up[::sps] = sym
    x = np.convolve(up, htx)[len(htx) // 2:][:N * sps]
    n = len(x)
    x = np.fft.ifft(np.fft.fft(x) * np.exp(-2j * np.pi * np.fft.fftfreq(n) * tau))
    x = x * np.exp(2j * np.pi * nu / sps * np.arange(n))
    rms = np.sqrt(np.mean(np.abs(x) ** 2))
    es = rms ** 2 * sps
    x = x + np.sqrt(es / 10 ** (esn0 / 10) / 2) * (rng.standard_normal(n) + 1j * rng.standard_normal(n))
    return x, nu, tau, rms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--symbols", type=int, default=8192)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dc", type=float, default=0.0, help="DC offset, times the signal's RMS")
    ap.add_argument("--dc-drift", type=float, default=0.05,
                    help="the DC's change since the previous span, times the DC")
    a = ap.parse_args()
    if a.dc > 0:
        return main_dc(a)
    rng = np.random.default_rng(a.seed)
    sps, N = 4, a.symbols
    htx, hpre = rrc(0.35, sps, 12), rrc(0.35, sps, 4)
    for esn0 in (4, 8, 12):
        err = {"A": [], "B": [], "C": []}
        for _ in range(a.trials):
            x, nu, tau, _ = signal(rng, N, sps, htx, esn0)
            n = len(x)
            p = np.convolve(x, hpre)[len(hpre) // 2:][:n]
            at = (np.arange(N) * sps + int(round(tau))) % n
            err["A"].append(peak(p[at] ** 4) / 4 - nu)
            err["B"].append(peak((p ** 4).reshape(N, sps).sum(1)) / 4 - nu)
            ph = [p[i::sps][:N] ** 4 for i in range(sps)]
            line = [abs(np.sum(v * np.exp(-2j * np.pi * 4 * nu * np.arange(N)))) for v in ph]
            err["C"].append(peak(ph[int(np.argmax(line))]) / 4 - nu)
        print("Es/N0 %2d dB: " % esn0 + "  ".join(
            "%s rms %.2e max %.2e" % (k, np.sqrt(np.mean(np.square(v))), np.max(np.abs(v))) for k, v in err.items()))


def main_dc(a):
    rng = np.random.default_rng(a.seed)
    sps, N = 4, a.symbols
    htx, hpre = rrc(0.35, sps, 12), rrc(0.35, sps, 4)
    gain = np.sum(hpre)  # the pre-filter's DC gain
    for esn0 in (4, 8, 12):
        err = {"B0": [], "B1": [], "B2": []}
        b3 = 0.0
        for _ in range(a.trials):
            x, nu, tau, rms = signal(rng, N, sps, htx, esn0)
            n = len(x)
            d = a.dc * rms * np.exp(2j * np.pi * rng.uniform())
            d_prev = d * (1 + a.dc_drift * np.exp(2j * np.pi * rng.uniform()))
            p = np.convolve(x + d, hpre)[len(hpre) // 2:][:n]
            D, Dp = d * gain, d_prev * gain
            rows = lambda q: q.reshape(N, sps).sum(1)
            err["B0"].append(peak(rows(p ** 4)) / 4 - nu)
            r1 = rows((p - D) ** 4)
            err["B1"].append(peak(r1) / 4 - nu)
            err["B2"].append(peak(rows((p - Dp) ** 4)) / 4 - nu)
            # (p - D)^4 = p^4 - 4 D p^3 + 6 D^2 p^2 - 4 D^3 p + D^4, each power summed a symbol
            r3 = rows(p ** 4) - 4 * D * rows(p ** 3) + 6 * D ** 2 * rows(p ** 2) - 4 * D ** 3 * rows(p) + sps * D ** 4
            b3 = max(b3, float(np.max(np.abs(r3 - r1)) / np.max(np.abs(r1))))
        print("DC %.2f, drift %.2f, Es/N0 %2d dB: " % (a.dc, a.dc_drift, esn0) + "  ".join(
            "%s rms %.2e max %.2e" % (k, np.sqrt(np.mean(np.square(v))), np.max(np.abs(v))) for k, v in err.items())
            + "  B3 - B1 %.1e (relative)" % b3)


if __name__ == "__main__":
    main()
