#!/usr/bin/env python3
"""Shared-memory bank model of the fused CUDA channelizer's loads (default build, K = 1024,
D = K/2, tile J = 8, 256 threads): for every 8-byte load instruction of a block and tile (the
read-back of the first FFT stage folded into the filter, both radix-16 passes, the output phase with computed rows) it counts the
wavefronts under two rules (per half-warp: distinct words per 8-byte bank pair; whole warp:
distinct words per 4-byte bank) against the ideal of 2 per warp request.

bench/GPU_NOTES.md (run 12) cites it: the model predicts no conflict, while ncu reports 15 %
extra shared-load wavefronts; the source of those is not located. Indexing mirrors
src/chan/chan_cuda_fused.cuh and chan_cuda_policy.h (prx_pad, prx_fused_vs, prx_bfly_map,
prx_fused_pass16, prx_fused_r4_store, prx_fused_output)."""
# shared-memory 8-byte access patterns of the default fused kernel, K=1024, D=512, J=8, T=256
K=1024; J=8; T=256
VS=((K+K//16+7)&~7)+16//J
pad=lambda e: e+(e>>4)
def wf(addrs):
    # two rules: (a) per half-warp, max distinct words per bank pair, summed; (b) whole warp: max over 32 banks of distinct 4-byte words /1
    a=0
    for h in (addrs[:16],addrs[16:]):
        d={}
        for w in set(h): d.setdefault(w%16,set()).add(w)
        a+=max(len(v) for v in d.values())
    d={}
    for w in set(addrs):
        for b in (2*w%32, (2*w+1)%32): d.setdefault(b,set()).add(w)
    bwhole=max(len(v) for v in d.values())
    return a, bwhole
def report(name, gen):
    tot=[0,0]; n=0
    for warp in range(T//32):
        for acc in gen(warp):
            a,b=wf(acc); tot[0]+=a; tot[1]+=b; n+=1
    print(f"{name}: requests/block {n}, wavefronts half-warp rule {tot[0]} (ideal {2*n}), whole-warp rule {tot[1]}")
# R4F reload: thread tid reads V[jl*VS + pad(tid + m*256)], m in (0,2), jl 0..7
def r4(warp):
    for jl in range(J):
        for m in (0,2):
            yield [jl*VS+pad(32*warp+l+m*256) for l in range(32)]
report("R4F reload", r4)
# pass16: lgL, S=L/16; bfly map: NB=64 < T -> b=tid&63, jl_first=tid>>6, 2 vectors (jl_first, jl_first+4)
def p16(lgL):
    L=1<<lgL; S=L>>4; L4=L>>2
    def g(warp):
        for k in range(2):
            for m1 in range(4):
                for m2 in range(4):
                    ad=[]
                    for l in range(32):
                        tid=32*warp+l; b=tid&63; jl=(tid>>6)+4*k
                        i=b&(S-1); gg=b>>(lgL-4) if S>1 else b
                        if S==1: i=0; gg=b
                        e0=(gg<<lgL)+i
                        off=m1*L4+m2*S
                        ad.append(jl*VS+pad(e0)+off+(off>>4))
                    yield ad
    return g
report("pass16 L=256", p16(8))
report("pass16 L=16", p16(4))
# output (natural): lane q=tid&3 reads vectors 2q,2q+1 at pad(i), i = tid>>2 + 64*it
def out(warp):
    for it in range(16):
        for v in (0,1):
            yield [(2*(l&3)+v)*VS+pad(((32*warp+l)>>2)+64*it) for l in range(32)]
report("output", out)
