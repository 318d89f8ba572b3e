"""Weight-only int4 and int8 CPU kernels (PyTorch 2.13: _weight_int4pack_mm_for_cpu, _weight_int8pack_mm)
against dynamic int8 (what the loader uses) and fp32, on one Linear of each of the Qwen 0.5B draft's shapes, one
row, ms a call (mean of 50 after 5; the small layers sit in cache, the head does not). A diagnostic.

    .venv/bin/python docs/bench-auto/int4_kernels.py > docs/bench-auto/int4_kernels.txt
"""
import time

import torch
import warnings
warnings.simplefilter("ignore")
torch.manual_seed(0)
def bench(f, n=50):
    for _ in range(5): f()
    t=time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter()-t)/n*1e3
shapes=[(896,896),(4864,896),(896,4864),(151936,896)]
for out_f,in_f in shapes:
    lin=torch.nn.Linear(in_f,out_f,bias=False)
    x=torch.randn(1,in_f)
    dq=torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin),{torch.nn.Linear},dtype=torch.qint8)
    t_fp=bench(lambda: lin(x)); t_dq=bench(lambda: dq(x))
    # int8 weight-only
    w=lin.weight.detach()
    s8=w.abs().amax(1)/127; w8=torch.round(w/s8[:,None]).to(torch.int8)
    t_w8=bench(lambda: torch.ops.aten._weight_int8pack_mm(x,w8,s8))
    # int4 group 64
    gs=64
    wg=w.reshape(out_f,-1,gs); mn=wg.amin(-1,keepdim=True); mx=wg.amax(-1,keepdim=True)
    scale=((mx-mn)/15).clamp(min=1e-8); zero=mn+scale*8
    q=torch.clamp(torch.round((wg-mn)/scale),0,15).to(torch.int32).reshape(out_f,in_f)
    packed=torch.ops.aten._convert_weight_to_int4pack_for_cpu(q,1)
    sz=torch.stack([scale.squeeze(-1),zero.squeeze(-1)],-1).transpose(0,1).contiguous()
    try:
        y4=torch.ops.aten._weight_int4pack_mm_for_cpu(x,packed,gs,sz)
        err=(y4-lin(x)).abs().max().item()
        t_4=bench(lambda: torch.ops.aten._weight_int4pack_mm_for_cpu(x,packed,gs,sz))
    except Exception as e:
        t_4=float('nan'); err=str(e)[:200]
    print(out_f,in_f,f"fp32 {t_fp:.3f} dyn-int8 {t_dq:.3f} w8 {t_w8:.3f} int4 {t_4:.3f} err4 {err}")
