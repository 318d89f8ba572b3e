"""Whether a wide packed pass on the AVX2 host re-reads its weights: Qwen2.5-1.5B's 28 MLPs (gate, up,
down: 1.16 B fp32 weights, 4.6 GB, random) through oneDNN's packed kernel (the fast engine's), over
1-17 rows, three ways: each weight packed whole (`full`, what models/fast.py does), packed in slices
of 512 or 2,048 output rows each multiplied by all the rows at once (`chunk512`, `chunk2048`: a
slice's weights read from DRAM once and then from cache for every row block of the kernel), and
PyTorch's default dense kernel (`dense`). Milliseconds, medians of 3 interleaved sweeps after one
untimed.

If the packed kernel streamed its weights from memory once per block of rows, slices that stay in
cache would cut a wide pass's cost; they do not (output beside it). What a row costs past the first
is arithmetic: at 17 rows the MLPs run 39 GFLOP in 0.48 s, about 80 GFLOP/s on the host's 2 cores.

    .venv/bin/python docs/bench-auto/avx2_gemm_chunks.py 28 512,2048 > docs/bench-auto/avx2_gemm_chunks.txt
"""
import time, statistics, sys, torch
from torch.nn import functional as F
torch.manual_seed(0)
L = int(sys.argv[1]) if len(sys.argv) > 1 else 28
H, I = 1536, 8960
layers = []
for _ in range(L):
    layers.append([torch.randn(I, H) * 0.02, torch.randn(I, H) * 0.02, torch.randn(H, I) * 0.02])
def pack(w): return torch.ops.mkldnn._reorder_linear_weight(w, 16)
def lin(x, p): return torch.ops.mkldnn._linear_pointwise(x, p, None, "none", [], "")
full = [[pack(w) for w in ws] for ws in layers]
def chunked(c):
    return [[[pack(w[i:i+c].contiguous()) for i in range(0, w.shape[0], c)] for w in ws] for ws in layers]
def run_full(M):
    x = torch.randn(M, H); xi = torch.randn(M, I)
    for g, u, d in full:
        lin(x, g); lin(x, u); lin(xi, d)
def make_run_chunked(ch):
    def run(M):
        x = torch.randn(M, H); xi = torch.randn(M, I)
        for g, u, d in ch:
            torch.cat([lin(x, p) for p in g], 1); torch.cat([lin(x, p) for p in u], 1); torch.cat([lin(xi, p) for p in d], 1)
    return run
def run_dense(M):
    x = torch.randn(M, H); xi = torch.randn(M, I)
    for g, u, d in layers:
        F.linear(x, g); F.linear(x, u); F.linear(xi, d)
variants = {"full": run_full, "dense": run_dense}
for c in map(int, sys.argv[2].split(",")) if len(sys.argv) > 2 else (1024,):
    variants[f"chunk{c}"] = make_run_chunked(chunked(c))
widths = (1, 3, 5, 6, 7, 9, 12, 13, 17)
res = {(v, m): [] for v in variants for m in widths}
for rep in range(4):
    for m in widths:
        for v, f in variants.items():
            t = time.perf_counter(); f(m); dt = time.perf_counter() - t
            if rep: res[v, m].append(dt)
for v in variants:
    print(v, " ".join(f"{m}:{statistics.median(res[v, m])*1000:.0f}" for m in widths), flush=True)
