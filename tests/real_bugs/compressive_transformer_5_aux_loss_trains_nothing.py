"""lucidrains/compressive-transformer-pytorch#5: the auxiliary (memory reconstruction) loss updates no weight.

Symptom: calling backward on aux_loss alone and listing the parameters whose .grad is set gives none;
backward runs without an error. Training adds it to the language-model loss, where it changes the
logged total and nothing else. The author's fix is titled "make sure auxiliary loss actually optimizes
the compression net".
Mechanism: inert-loss-term. Each layer's reconstruction loss compared attention over the old memories
with attention over the compressed ones, with both sides detached, so it has no graph. The total starts from
`torch.tensor(0., requires_grad=True)`, so the sum still has a graph, but that graph reaches only such
seeds and no parameter. The compression network never learns.
Fix: detach the target side (the old memories and the queries) and keep the compressed side attached, so
the loss reaches the compression convolution.
"""

import math

import torch
from torch import nn
from torch.nn import functional as F

THREAD = "lucidrains/compressive-transformer-pytorch#5"
MECHANISM = "inert-loss-term"


def _attend(q, k, v):
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1) @ v


class MemoryLayer(nn.Module):
    def __init__(self, dim, ratio=2):
        super().__init__()
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, 2 * dim, bias=False)
        self.compress = nn.Conv1d(dim, dim, ratio, stride=ratio)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, mem, keep_compressed_graph):
        q = self.to_q(x)
        kv_in = x if mem is None else torch.cat([mem, x], dim=1)
        k, v = self.to_kv(kv_in).chunk(2, dim=-1)
        y = x + self.out(_attend(q, k, v))
        aux = torch.zeros(1, requires_grad=True)  # what a layer without memory returns
        if mem is None:
            return y, aux
        compressed = self.compress(mem.detach().transpose(1, 2)).transpose(1, 2)
        old_k, old_v = self.to_kv(mem).chunk(2, dim=-1)
        c_k, c_v = F.linear(compressed, self.to_kv.weight.detach()).chunk(2, dim=-1)
        q, old_k, old_v = q.detach(), old_k.detach(), old_v.detach()
        if not keep_compressed_graph:
            c_k, c_v = c_k.detach(), c_v.detach()
        aux = F.mse_loss(_attend(q, c_k, c_v), _attend(q, old_k, old_v))
        return y, aux


class Model(nn.Module):
    def __init__(self, keep_compressed_graph, vocab=11, dim=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([MemoryLayer(dim), MemoryLayer(dim)])
        self.head = nn.Linear(dim, vocab)
        self.keep = keep_compressed_graph

    def forward(self, tokens, mems):
        x = self.embed(tokens)
        aux = torch.tensor(0.0, requires_grad=True)
        next_mems = []
        for layer, mem in zip(self.layers, mems):
            next_mems.append(x.detach())
            x, layer_aux = layer(x, mem, self.keep)
            aux = aux + layer_aux
        return self.head(x), next_mems, aux.sum() * 0.5 / len(self.layers)


def _run(keep_compressed_graph):
    torch.manual_seed(0)
    model = Model(keep_compressed_graph)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    tokens = torch.randint(0, 11, (3, 2, 5))
    mems = [None, None]
    losses = []
    for segment in tokens:
        logits, mems, aux_loss = model(segment[:, :-1], mems)
        loss = F.cross_entropy(logits.reshape(-1, 11), segment[:, 1:].reshape(-1))
        opt.zero_grad()
        (loss + aux_loss).backward()
        opt.step()
        losses.append((loss.item(), aux_loss.item()))
    return losses, model.layers[1].compress.weight.detach().clone()


def bug():
    return _run(keep_compressed_graph=False)


def fixed():
    return _run(keep_compressed_graph=True)
