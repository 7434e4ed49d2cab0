#!/usr/bin/env python3
"""CuPy peer of bench_chan_cuda: cupyx.signal.channelize_poly (critically sampled, D = K, its
only mode) on the same input size, K in {128, 1024, 4096}, 16 taps per channel, cf32 input
already on the device. Prints JSON lines.

With --summary POLYRX_JSONL it also reads bench_chan_cuda's JSON lines, and prints the ratio
polyrx / CuPy at D = K next to the table (the last lines of the output)."""
import argparse
import json
import sys
import time


def run_cupy(n, reps):
    import cupy as cp
    import cupyx.signal

    rows = []
    rng = cp.random.default_rng(7)
    x = (rng.standard_normal(n, dtype=cp.float32) + 1j * rng.standard_normal(n, dtype=cp.float32)).astype(cp.complex64)
    for K in (128, 1024, 4096):
        h = cp.asarray(rng.standard_normal(K * 16, dtype=cp.float32) / (K * 16))
        y = cupyx.signal.channelize_poly(x, h, K)  # warm-up (compiles its kernels)
        cp.cuda.Device().synchronize()
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        ts = []
        for _ in range(reps):
            e0.record()
            y = cupyx.signal.channelize_poly(x, h, K)
            e1.record()
            e1.synchronize()
            ts.append(cp.cuda.get_elapsed_time(e0, e1) * 1e-3)
        ts.sort()
        med = ts[len(ts) // 2]
        row = {"bench": "chan_cuda", "kind": "cupy", "K": K, "D": K, "taps": 16, "samples": n,
               "out_shape": list(y.shape), "median_ms": med * 1e3, "best_ms": ts[0] * 1e3,
               "gsps": n / med / 1e9}
        print(json.dumps(row), flush=True)
        rows.append(row)
        del y
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=1 << 26)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--summary", help="bench_chan_cuda JSON lines to compare with")
    a = ap.parse_args()
    try:
        rows = run_cupy(a.samples, a.reps)
    except Exception as e:  # no CuPy, no device: say so, the rest of the run stands
        print(json.dumps({"bench": "chan_cuda", "kind": "cupy", "error": repr(e)}), flush=True)
        rows = []
    if not a.summary:
        return
    ours = {}
    with open(a.summary) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r.get("kind") == "device" and r.get("in") == "cf32" and r.get("out") == "cf32" \
                    and r.get("label", "default") == "default" and r["K"] == r["D"] \
                    and r.get("samples") == a.samples:
                ours[r["K"]] = max(ours.get(r["K"], 0), r["gsps"])
    print()
    print("== polyrx vs cupyx.signal.channelize_poly (D = K, 16 taps, cf32, device-resident, %d samples) ==" % a.samples)
    for r in rows:
        p = ours.get(r["K"])
        ratio = p / r["gsps"] if p else float("nan")
        print(json.dumps({"bench": "chan_cuda", "kind": "cupy_ratio", "K": r["K"], "polyrx_gsps": p,
                          "cupy_gsps": r["gsps"], "ratio": ratio}))
        print("K=%-5d polyrx %7.1f Gsps   cupy %6.2f Gsps   ratio %6.1fx" % (r["K"], p or float("nan"), r["gsps"], ratio))


if __name__ == "__main__":
    main()
