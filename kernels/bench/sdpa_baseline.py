#!/usr/bin/env python3
"""PyTorch baselines beside isim-kernel-bench (issue 16), on the same attention shapes.

    python3 kernels/bench/sdpa_baseline.py [--quick] [--csv FILE]

Measures, on the current CUDA device, with CUDA events (median of repetitions after warm-up):
  - d2d: a device-to-device copy of 2 GiB (bytes read + written), the ceiling decode is held to;
  - decode: torch.nn.functional.scaled_dot_product_attention with one query token per sequence
    over contiguous K/V (batch x heads x context x dim), GQA through enable_gqa; GB/s counts
    the K and V bytes read, as isim-kernel-bench does for the paged kernel;
  - prefill: the same function, causal, with the flash backend where PyTorch has it; TFLOP/s
    counts 2 x 2 x q_len^2 / 2 x dim per q head (QK^T and PV, causal half).
Shapes: Llama-3.1-8B (32 q / 8 kv heads), Llama-3.1-70B and Qwen3-32B (64 / 8; both share
this shape), head dim 128, in bf16 and f16 (dtype names as in kernels/dtype.h).

Writes one CSV row per cell (section, model, dtype, batch, context, q_len, median_ms, gbps,
tflops, pct_of_d2d) to FILE.partial, renamed to FILE when complete. Exit 77 (skipped) when torch
is missing or sees no CUDA device, 0 otherwise. Never gates anything.
"""
import argparse
import os
import statistics
import sys

SKIP = 77
SHAPES = [("llama-3.1-8b", 32, 8), ("llama-3.1-70b+qwen3-32b", 64, 8)]
HEAD_DIM = 128


def timed(torch, fn, warmup, reps):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def d2d_gbps(torch, warmup, reps):
    n = 1 << 30  # 1 GiB each way
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    ms = timed(torch, lambda: b.copy_(a), warmup, reps)
    return 2 * n / (ms * 1e6)


def decode_cells(quick):
    if quick:
        return [(1, 32768), (32, 4096), (64, 4096)]
    return [(1, 4096), (1, 32768), (8, 8192), (32, 4096), (64, 4096), (128, 2048)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer cells and repetitions")
    ap.add_argument("--csv", default="sdpa-baseline.csv")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.attention
        import torch.nn.functional as F
    except ImportError as e:
        print(f"sdpa_baseline: skipped: no torch ({e})", file=sys.stderr)
        return SKIP
    if not torch.cuda.is_available():
        print("sdpa_baseline: skipped: torch sees no CUDA device", file=sys.stderr)
        return SKIP
    warmup, reps = (2, 7) if args.quick else (5, 20)
    torch.manual_seed(1)
    dev = torch.cuda.get_device_name()
    print(f"sdpa_baseline on {dev}, torch {torch.__version__}")
    ceiling = d2d_gbps(torch, warmup, reps)
    rows = [("d2d", "", "uint8", 0, 0, 0, 0.0, ceiling, 0.0, 100.0)]
    print(f"  d2d copy: {ceiling:.1f} GB/s")
    gqa = {"enable_gqa": True}
    for model, hq, hkv in SHAPES:
        for dtype_name in ("bf16", "f16"):
            dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float16
            for batch, ctx in decode_cells(args.quick):
                q = torch.randn(batch, hq, 1, HEAD_DIM, dtype=dtype, device="cuda")
                k = torch.randn(batch, hkv, ctx, HEAD_DIM, dtype=dtype, device="cuda")
                v = torch.randn_like(k)
                ms = timed(torch, lambda: F.scaled_dot_product_attention(q, k, v, **gqa),
                           warmup, reps)
                gbps = 2 * k.numel() * k.element_size() / (ms * 1e6)
                rows.append(("decode", model, dtype_name, batch, ctx, 1, ms, gbps, 0.0,
                             100.0 * gbps / ceiling))
                print(f"  decode {model} {dtype_name} batch {batch} ctx {ctx}: {ms:.3f} ms "
                      f"{gbps:.1f} GB/s ({100.0 * gbps / ceiling:.1f}% of d2d)")
                del q, k, v
            for batch, qlen in ([(1, 4096), (4, 2048)] if args.quick else
                                [(1, 2048), (1, 8192), (4, 2048), (16, 512)]):
                q = torch.randn(batch, hq, qlen, HEAD_DIM, dtype=dtype, device="cuda")
                k = torch.randn(batch, hkv, qlen, HEAD_DIM, dtype=dtype, device="cuda")
                v = torch.randn_like(k)
                backends = [torch.nn.attention.SDPBackend.FLASH_ATTENTION,
                            torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION]
                with torch.nn.attention.sdpa_kernel(backends):
                    ms = timed(torch, lambda: F.scaled_dot_product_attention(
                        q, k, v, is_causal=True, **gqa), warmup, reps)
                flops = 4.0 * batch * hq * qlen * qlen * HEAD_DIM / 2
                tflops = flops / (ms * 1e9)
                rows.append(("prefill", model, dtype_name, batch, qlen, qlen, ms, 0.0, tflops,
                             0.0))
                print(f"  prefill {model} {dtype_name} batch {batch} q_len {qlen}: {ms:.3f} ms "
                      f"{tflops:.1f} TFLOP/s")
                del q, k, v
    tmp = args.csv + ".partial"
    with open(tmp, "w") as f:
        f.write("section,model,dtype,batch,context,q_len,median_ms,gbps,tflops,pct_of_d2d\n")
        for r in rows:
            f.write(",".join(f"{x:.6g}" if isinstance(x, float) else str(x) for x in r) + "\n")
    os.replace(tmp, args.csv)
    print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
