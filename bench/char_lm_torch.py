#!/usr/bin/env python3
"""PyTorch 1.13's side of the char_lm benchmark: the same model as examples/char_lm/model.h
(pre-norm decoder-only transformer, 4 layers, 4 heads, dim 128, context 128, vocabulary 114,
tied embedding), one measurement per process; bench/char_lm.py runs it against bench_char_lm.

    char_lm_torch.py --what train|generate|generate_nocache [--steps 10] [--threads 2]

torch 1.13 has no scaled_dot_product_attention, so attention is written out as nanoGPT does
for it (matmul, causal masked_fill, softmax, matmul); ember's is the same arithmetic.
generate keeps each layer's keys and values and appends to them (torch.cat), as Hugging
Face's GPT-2 does; generate_nocache runs the whole sequence again for every new token.
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, BLOCK, LAYERS, HEADS, DIM = 114, 128, 4, 4, 128


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(DIM)
        self.c_attn = nn.Linear(DIM, 3 * DIM)
        self.attn_proj = nn.Linear(DIM, DIM)
        self.ln_2 = nn.LayerNorm(DIM)
        self.c_fc = nn.Linear(DIM, 4 * DIM)
        self.mlp_proj = nn.Linear(4 * DIM, DIM)
        self.register_buffer("causal", torch.ones(BLOCK, BLOCK, dtype=torch.bool).triu(1))

    def attention(self, x, cache):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            if cache[0] is not None:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            cache[0], cache[1] = k, v
        S = k.size(2)
        att = (q * (1.0 / math.sqrt(k.size(-1)))) @ k.transpose(-2, -1)
        if T > 1:
            att = att.masked_fill(self.causal[S - T:S, :S], float("-inf"))
        y = att.softmax(dim=-1) @ v
        return y.transpose(1, 2).reshape(B, T, C)

    def forward(self, x, cache=None):
        x = x + self.attn_proj(self.attention(self.ln_1(x), cache))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, DIM)
        self.wpe = nn.Parameter(torch.zeros(BLOCK, DIM))
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(DIM)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * LAYERS) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)

    def forward(self, idx, caches=None, start=0):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe[start:start + T]
        for i, b in enumerate(self.blocks):
            x = b(x, None if caches is None else caches[i])
        return F.linear(self.ln_f(x), self.wte.weight)


def sample(logits, gen):
    logits = logits / 0.8
    v, _ = torch.topk(logits, 20)
    logits[logits < v[-1]] = float("-inf")
    return torch.multinomial(logits.softmax(-1), 1, generator=gen).item()


def generate(model, prompt, n, gen, cached):
    out = list(prompt)
    with torch.inference_mode():
        if cached:
            caches = [[None, None] for _ in range(LAYERS)]
            logits = model(torch.tensor([out]), caches, 0)
            for _ in range(n):
                out.append(sample(logits[0, -1], gen))
                logits = model(torch.tensor([[out[-1]]]), caches, len(out) - 1)
        else:
            for _ in range(n):
                logits = model(torch.tensor([out[-BLOCK:]]))
                out.append(sample(logits[0, -1], gen))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--what", default="train", choices=["train", "generate", "generate_nocache"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = Transformer()
    samples = []
    if args.what == "train":
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                lr=1e-3, betas=(0.9, 0.99))
        x = torch.randint(0, VOCAB, (32, BLOCK))
        y = torch.randint(0, VOCAB, (32, BLOCK))

        def step():
            opt.zero_grad()
            F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1)).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()

        for _ in range(3):
            step()
        for _ in range(args.steps):
            t0 = time.perf_counter()
            step()
            samples.append((time.perf_counter() - t0) * 1e3)
        print("summary: ms=%.3f" % statistics.median(samples))
        return
    model.eval()
    prompt, n = [1, 2, 3, 4, 5, 6, 7, 8], 112
    gen = torch.Generator().manual_seed(0)
    cached = args.what == "generate"
    generate(model, prompt, n, gen, cached)
    for _ in range(args.steps):
        t0 = time.perf_counter()
        generate(model, prompt, n, gen, cached)
        samples.append(n / (time.perf_counter() - t0))
    print("summary: tokens_per_s=%.1f" % statistics.median(samples))


if __name__ == "__main__":
    main()
