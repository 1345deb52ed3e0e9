"""Token log-likelihoods of many texts that share a prefix, with one causal-LM pass over the prefix.

FED scores one dialogue against dozens of follow-up utterances. A token's loss depends only on the
tokens before it, so the dialogue's token losses are the same whatever follow-up comes after: this
module runs the shared prefix once (batched across dialogues, its key/value cache kept) and then
all follow-ups of the dialogue at once as a token trie with tree attention (see ``PrefixLM``).
Dialogues that extend one another (FED's turn-level items of one conversation, per-turn scores of a
chat) also share their common token prefix: it runs once, and each dialogue runs only its new tokens.
Models are loaded by ``lm_loading`` (with the CPU kernels of ``lm_packing``); this module only scores.
"""
from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass
from typing import Sequence

import torch

from parlai_dialeval.errors import DialevalError

# Prefixes of one batch may hold at most this many times their own tokens with padding.
PAD_SLACK = 1.25


@dataclass
class SequenceLoss:
    """Summed token NLL of one text: ``total`` over its ``count`` predicted tokens (positions
    1..L-1, as ``model(ids, labels=ids).loss`` averages), ``tail`` over the tokens from its tail
    start on (the follow-up)."""

    total: float
    count: int
    tail: float


def logsumexp_rows(x: torch.Tensor, rows: int = 16) -> torch.Tensor:
    """``torch.logsumexp(x, dim=-1)``, computed ``rows`` rows at a time (each row's reduction is
    unchanged). Why: over a whole rows x 50,257 logits tensor torch allocates a temporary as large as
    the logits (fresh pages from the kernel every call) and passes over it three times in memory; 16
    rows (3 MB) stay in cache. For one item's trie (284 rows) whole took longer than the output
    layer's product itself; row-wise it adds next to nothing (benchmarks/README.md)."""
    flat = x.reshape(-1, x.shape[-1])
    out = torch.empty(flat.shape[0], dtype=x.dtype, device=x.device)
    for start in range(0, flat.shape[0], rows):
        torch.logsumexp(flat[start: start + rows], dim=-1, out=out[start: start + rows])
    return out.view(x.shape[:-1])


def max_length(model) -> int:
    config = model.config
    for key in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return 1 << 30


def _pad(rows: Sequence[Sequence[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    return ids.to(device), mask.to(device)


def build_trie(suffixes: Sequence[Sequence[int]]):
    """Token trie of the suffixes: (tokens, parents, depths, paths); -1 is the prefix's end."""
    tokens, parents, depths, paths, index = [], [], [], [], {}
    for suffix in suffixes:
        parent, path = -1, []
        for token in suffix:
            node = index.get((parent, token))
            if node is None:
                node = index[(parent, token)] = len(tokens)
                tokens.append(token)
                parents.append(parent)
                depths.append(0 if parent < 0 else depths[parent] + 1)
            parent = node
            path.append(node)
        paths.append(path)
    return tokens, parents, depths, paths


def common_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token id sequences."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _crop(cache, length: int) -> None:
    # A negative argument removes that many tokens in every transformers version that has crop().
    if cache.get_seq_length() > length:
        cache.crop(length - cache.get_seq_length())


class PrefixLM:
    """Scores groups of token sequences; every sequence of a group shares that group's first tokens.

    Per group: one pass over the shared prefix (its key/value cache kept), then one pass over the
    token trie of the suffixes (follow-ups sharing first words share nodes; leaves, predicted by
    their parents' logits, do not run), each node attending to the prefix and its own ancestors
    through a 4D attention mask ("tree attention"), at position prefix length + depth. Groups are
    batched (right-padded) up to ``batch_size`` rows and ``max_tokens`` rows x width, which bounds
    the rows x width x vocabulary logits of one pass.

    Groups whose prefixes share their first ``min_shared`` tokens with another group's (compared as
    the token ids fed to the model from position 0, so neither a BPE merge across the boundary nor
    the shifted window of a truncated dialogue can fool it) run one at a time, in token order, along
    a chain: the previous prefix's key/value cache and per-token losses are cut back to the common
    part and only the new tokens run. Only the current chain's cache is kept.

    ``prefix_losses=False`` (for callers that read only ``tail``): the prefix's own token losses are
    not computed, so ``total`` covers the suffix alone, and where the model takes ``logits_to_keep``
    its output layer runs for the prefix's last position and the trie nodes a tail token follows only
    (about 30% of a token's work; ``total`` then covers the tails alone).
    """

    def __init__(self, model, batch_size: int = 16, max_tokens: int = 2048, min_shared: int = 8,
                 prefix_losses: bool = True):
        self.model = model
        self.prefix_losses = prefix_losses
        self.last_only = not prefix_losses and "logits_to_keep" in inspect.signature(model.forward).parameters
        self.min_shared = min_shared
        self.batch_size = max(1, batch_size)
        self.max_tokens = max_tokens
        self.limit = max_length(model)
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.warned = False

    @torch.inference_mode()
    def score(self, groups: Sequence[Sequence[Sequence[int]]], tail_starts: Sequence[Sequence[int]],
              progress=None) -> list[list[SequenceLoss]]:
        """``groups[g][k]``: token ids of text k of group g; ``tail_starts[g][k]``: first tail position."""
        plans = [self._plan(group, starts) for group, starts in zip(groups, tail_starts)]
        results: list[list[SequenceLoss]] = [[] for _ in groups]
        chain = self._chained(plans)
        self._run_chain(chain, plans, results, progress)
        batched = set(chain)
        for batch in self._batches([None if g in batched else plan for g, plan in enumerate(plans)]):
            self._run(batch, plans, results)
            if progress is not None:
                progress.update(len(batch))
        return results

    def _chained(self, plans) -> list[int]:
        """Groups whose model input shares its first ``min_shared`` tokens with another's, in token order."""
        order = sorted((g for g, plan in enumerate(plans) if plan is not None),
                       key=lambda g: plans[g]["prefix"])
        chained: set[int] = set()
        for a, b in zip(order, order[1:]):
            if common_length(plans[a]["prefix"], plans[b]["prefix"]) >= max(self.min_shared, 2):
                chained.update((a, b))
        return [g for g in order if g in chained]

    def _run_chain(self, order, plans, results, progress) -> None:
        ids: list[int] = []  # the prefix whose key/value cache is held
        nll: list[float] = []  # nll[i]: loss of ids[i + 1]
        cache = None
        for g in order:
            prefix = plans[g]["prefix"]
            # The token after the common part needs the logits of the last common position: rerun it.
            keep = min(common_length(ids, prefix), len(prefix) - 1) - 1
            if cache is None or keep < 1:
                keep, cache = 0, None
            else:
                _crop(cache, keep)
            del nll[keep:]
            for start in range(keep, len(prefix), self.max_tokens):
                chunk = torch.tensor([prefix[start: start + self.max_tokens]], device=self.device)
                keep_logits = {"logits_to_keep": 1} if self.last_only else {}
                out = self.model(input_ids=chunk, past_key_values=cache, use_cache=True, **keep_logits)
                cache = out.past_key_values
                logits = out.logits[0].float()
                lse = logsumexp_rows(logits)
                if self.prefix_losses:
                    targets = prefix[start + 1: start + 1 + chunk.shape[1]]
                    picked = logits[torch.arange(len(targets), device=self.device),
                                    torch.tensor(targets, dtype=torch.long, device=self.device)]
                    nll += (lse[: len(targets)] - picked).tolist()
            ids = list(prefix)
            mask = torch.ones((1, len(prefix)), dtype=torch.long, device=self.device)
            self._tree([g], plans, results, cache, mask, [sum(nll)], [lse[-1]], [logits[-1]])
            _crop(cache, len(prefix))  # drop the trie's keys and values again
            del out, logits, lse
            if progress is not None:
                progress.update(1)

    def _plan(self, group, starts):
        if not group:
            return None
        common = min(len(seq) for seq in group) - 1
        first = group[0]
        for seq in group[1:]:
            n = 0
            while n < common and seq[n] == first[n]:
                n += 1
            common = n
        # The prefix never reaches into a tail, so the tail's sum is read from suffix positions alone.
        split = max(1, min([common] + list(starts)))
        tokens, parents, depths, paths = build_trie([seq[split:] for seq in group])
        overflow = split + max(depths) + 1 - self.limit
        drop = 0
        if overflow > 0:
            if overflow >= split:
                raise DialevalError(f"a follow-up of {max(depths) + 1} tokens does not fit the model's "
                                    f"maximum length of {self.limit} tokens")
            drop = overflow
            if not self.warned:
                warnings.warn(f"dialogue longer than the model's maximum length ({self.limit} tokens): its "
                              f"oldest tokens are dropped (further truncations are not warned about)",
                              stacklevel=4)
                self.warned = True
        # Only nodes with children run: a leaf's loss comes from its parent's logits and nothing
        # attends to it. Parents precede children, and a node with children has a parent with them.
        inner = sorted({parent for parent in parents if parent >= 0})
        fed = {node: i for i, node in enumerate(inner)}
        fed[-1] = -1
        return {"prefix": list(first[drop:split]), "tokens": [tokens[n] for n in inner],
                "parents": [fed[parents[n]] for n in inner], "depths": [depths[n] for n in inner],
                "nodes": tokens, "node_parents": [fed[parent] for parent in parents], "paths": paths,
                "starts": [s - split for s in starts]}

    def _batches(self, plans):
        # Dialogues of similar length share a batch, so little of a batch is padding.
        order = sorted((g for g, plan in enumerate(plans) if plan is not None),
                       key=lambda g: (len(plans[g]["prefix"]), len(plans[g]["tokens"])))
        batch, width, real = [], 0, 0
        for g in order:
            plan = plans[g]
            new_width = max(width, len(plan["prefix"]), len(plan["tokens"]))
            # Padding is work too: a prefix much longer than the batch's so far starts a new batch.
            padded = len(plan["prefix"]) * (len(batch) + 1) > PAD_SLACK * (real + len(plan["prefix"]))
            if batch and (len(batch) >= self.batch_size or new_width * (len(batch) + 1) > self.max_tokens or padded):
                yield batch
                new_width = max(len(plan["prefix"]), len(plan["tokens"]))
                batch, real = [], 0
            batch.append(g)
            width = new_width
            real += len(plan["prefix"])
        if batch:
            yield batch

    def _run(self, batch, plans, results):
        model, device = self.model, self.device
        prefixes = [plans[g]["prefix"] for g in batch]
        ids, mask = _pad(prefixes, 0, device)
        ends = [len(prefix) - 1 for prefix in prefixes]
        kept = sorted(set(ends)) if self.last_only else list(range(ids.shape[1]))
        keep_logits = {"logits_to_keep": torch.tensor(kept, device=device)} if self.last_only else {}
        out = model(input_ids=ids, attention_mask=mask, use_cache=True, **keep_logits)
        cache = out.past_key_values
        logits = out.logits.float()
        last_logits = logits[torch.arange(len(batch)), torch.tensor([kept.index(n) for n in ends])]
        last_lse = logsumexp_rows(last_logits)
        prefix_sum = [0.0] * len(batch)
        if self.prefix_losses:
            lse = logsumexp_rows(logits)
            picked = logits.gather(2, ids[:, 1:, None].clamp(min=0)).squeeze(2)
            prefix_sum = [float((lse[row, :n] - picked[row, :n]).sum()) for row, n in enumerate(ends)]
            del lse, picked
        del out, logits
        self._tree(batch, plans, results, cache, mask, prefix_sum, last_lse, last_logits)

    def _tree(self, batch, plans, results, cache, mask, prefix_sum, last_lse, last_logits):
        """Every group's follow-up trie after its prefix (``cache``, valid where ``mask`` is 1)."""
        device = self.device
        tree_ids, _ = _pad([plans[g]["tokens"] for g in batch], 0, device)
        width = tree_ids.shape[1]
        lengths = mask.sum(dim=1)
        positions = torch.zeros_like(tree_ids)
        allowed = torch.zeros((len(batch), width, mask.shape[1] + width), dtype=torch.bool)
        for row, g in enumerate(batch):
            plan = plans[g]
            n = len(plan["tokens"])
            positions[row, :n] = lengths[row] + torch.tensor(plan["depths"], device=device)
            allowed[row, :, : mask.shape[1]] = mask[row].bool().cpu()
            tree = allowed[row, :, mask.shape[1]:]
            for node, parent in enumerate(plan["parents"]):
                if parent >= 0:
                    tree[node] = tree[parent]
                tree[node, node] = True
            for pad in range(n, width):
                tree[pad, pad] = True
        bias = torch.zeros(allowed.shape, dtype=self.dtype)
        bias.masked_fill_(~allowed, torch.finfo(self.dtype).min)
        # Output layer only for the nodes whose next token is in a tail (all of them for FED's follow-ups;
        # for the local judge's prompts only the last one, before the options): ``row`` maps a node to its
        # row of ``logits``.
        kept = list(range(width))
        if self.last_only:
            kept = sorted({plans[g]["node_parents"][path[k]] for g in batch
                           for path, start in zip(plans[g]["paths"], plans[g]["starts"])
                           for k in range(start, len(path))} - {-1})
        row_of = torch.full((max(width, 1),), -1, dtype=torch.long, device=device)
        row_of[kept] = torch.arange(len(kept), device=device)
        if width and kept:  # follow-ups of one token each leave nothing to run
            keep_logits = {"logits_to_keep": torch.tensor(kept, device=device)} if self.last_only else {}
            logits = self.model(input_ids=tree_ids, past_key_values=cache, position_ids=positions,
                                attention_mask=bias[:, None].to(device), use_cache=True, **keep_logits).logits.float()
            node_lse = logsumexp_rows(logits)
        for row, g in enumerate(batch):
            plan = plans[g]
            tokens = torch.tensor(plan["nodes"], device=device)
            parents = torch.tensor(plan["node_parents"], dtype=torch.long, device=device)
            inner = parents >= 0
            nll = torch.zeros(len(tokens), device=device)  # stays 0 where no tail needs the node
            nll[~inner] = last_lse[row] - last_logits[row][tokens[~inner]]
            inner &= row_of[parents.clamp(min=0)] >= 0
            if inner.any():
                at = row_of[parents[inner]]
                nll[inner] = node_lse[row, at] - logits[row, at, tokens[inner]]
            nll = nll.tolist()
            results[g] = []
            for path, start in zip(plan["paths"], plan["starts"]):
                along = [nll[node] for node in path]
                results[g].append(SequenceLoss(
                    total=prefix_sum[row] + sum(along), count=len(plan["prefix"]) - 1 + len(path),
                    tail=sum(along[start:])))
