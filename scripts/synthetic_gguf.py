#!/usr/bin/env python3
"""Write a tiny, seeded, random-weight model in the Qwen2 architecture as GGUF.

A harness model for scripts/local_model_check.sh: random weights, so it measures the
local-model lane (serving, the context check, timeouts, infrastructure handling,
certify), not a model. Its tool calls are garbage.

The tokenizer is Qwen2's real one, copied from llama.cpp's
`models/ggml-vocab-qwen2.gguf` (vocabulary only, no weights), with the added tokens of
Qwen2.5 (`<tool_call>`, `</tool_call>`, FIM, ...) in the padding slots where Qwen2.5
puts them, `<|im_end|>` as the end of a turn, and a chat template with tool support
(llama.cpp's `models/templates/Qwen-Qwen2.5-7B-Instruct.jinja`).

The output is a pure function of the inputs and the seed: the same vocabulary file,
template, gguf-py and numpy give the same bytes (the check script pins the sha256).

Usage:
  synthetic_gguf.py --gguf-py DIR --vocab VOCAB.gguf --template T.jinja --out OUT.gguf
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Qwen2.5's added tokens, in the slots of Qwen2's padding ([PAD151646] ...).
QWEN25_ADDED = {
    151646: ("<|object_ref_start|>", 3),
    151647: ("<|object_ref_end|>", 3),
    151648: ("<|box_start|>", 3),
    151649: ("<|box_end|>", 3),
    151650: ("<|quad_start|>", 3),
    151651: ("<|quad_end|>", 3),
    151652: ("<|vision_start|>", 3),
    151653: ("<|vision_end|>", 3),
    151654: ("<|vision_pad|>", 3),
    151655: ("<|image_pad|>", 3),
    151656: ("<|video_pad|>", 3),
    151657: ("<tool_call>", 4),
    151658: ("</tool_call>", 4),
    151659: ("<|fim_prefix|>", 3),
    151660: ("<|fim_middle|>", 3),
    151661: ("<|fim_suffix|>", 3),
    151662: ("<|fim_pad|>", 3),
    151663: ("<|repo_name|>", 3),
    151664: ("<|file_sep|>", 3),
}
ENDOFTEXT, IM_END = 151643, 151645


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py directory")
    ap.add_argument("--vocab", required=True, help="ggml-vocab-qwen2.gguf")
    ap.add_argument("--template", required=True, help="chat template (jinja) with tool support")
    ap.add_argument("--out", required=True, help="the GGUF file to write")
    ap.add_argument("--seed", type=int, default=20261204)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--embd", type=int, default=64)
    ap.add_argument("--ff", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=32768, help="the model's trained context (metadata)")
    args = ap.parse_args()

    sys.path.insert(0, args.gguf_py)
    import numpy as np
    import gguf

    reader = gguf.GGUFReader(args.vocab)
    f = reader.fields

    def scalar(key):
        return f[key].contents()

    if scalar("general.architecture") != "qwen2":
        print(f"{args.vocab}: not a qwen2 vocabulary", file=sys.stderr)
        return 1
    tok_field, type_field, merge_field = (
        f["tokenizer.ggml.tokens"], f["tokenizer.ggml.token_type"], f["tokenizer.ggml.merges"])
    tokens = [bytes(tok_field.parts[i]) for i in tok_field.data]
    types = [int(type_field.parts[i][0]) for i in type_field.data]
    merges = [bytes(merge_field.parts[i]) for i in merge_field.data]
    for tid, (text, ttype) in QWEN25_ADDED.items():
        assert tokens[tid] == f"[PAD{tid}]".encode(), (tid, tokens[tid])
        tokens[tid], types[tid] = text.encode(), ttype
    n_vocab = len(tokens)
    template = Path(args.template).read_text(encoding="utf-8")

    E, L, FF, H, HKV = args.embd, args.layers, args.ff, args.heads, args.kv_heads
    assert E % H == 0 and H % HKV == 0
    e_kv = E // H * HKV

    out = Path(args.out)
    tmp = out.with_name(out.name + ".partial")
    w = gguf.GGUFWriter(str(tmp), "qwen2")
    w.add_name("tbb synthetic qwen2 (random weights, harness check only)")
    w.add_description(
        f"Random weights from seed {args.seed}; Qwen2 tokenizer; it measures the lane, not a model.")
    w.add_block_count(L)
    w.add_context_length(args.ctx)
    w.add_embedding_length(E)
    w.add_feed_forward_length(FF)
    w.add_head_count(H)
    w.add_head_count_kv(HKV)
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(scalar("tokenizer.ggml.pre"))
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(ENDOFTEXT)
    w.add_eos_token_id(IM_END)
    w.add_pad_token_id(ENDOFTEXT)
    w.add_add_bos_token(False)
    w.add_chat_template(template)

    rng = np.random.default_rng(args.seed)

    def normal(*shape, std=0.02, dtype=np.float16):
        return (rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(dtype)

    ones = lambda n: np.ones(n, dtype=np.float32)  # noqa: E731
    # numpy shapes are (rows = output features, columns = input features); the
    # embedding is tied to the output head (no output.weight), as in Qwen2.5-0.5B.
    w.add_tensor("token_embd.weight", normal(n_vocab, E))
    w.add_tensor("output_norm.weight", ones(E))
    for i in range(L):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", ones(E))
        w.add_tensor(b + "attn_q.weight", normal(E, E))
        w.add_tensor(b + "attn_q.bias", normal(E, dtype=np.float32))
        w.add_tensor(b + "attn_k.weight", normal(e_kv, E))
        w.add_tensor(b + "attn_k.bias", normal(e_kv, dtype=np.float32))
        w.add_tensor(b + "attn_v.weight", normal(e_kv, E))
        w.add_tensor(b + "attn_v.bias", normal(e_kv, dtype=np.float32))
        w.add_tensor(b + "attn_output.weight", normal(E, E))
        w.add_tensor(b + "ffn_norm.weight", ones(E))
        w.add_tensor(b + "ffn_gate.weight", normal(FF, E))
        w.add_tensor(b + "ffn_up.weight", normal(FF, E))
        w.add_tensor(b + "ffn_down.weight", normal(E, FF))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, out)
    print(f"wrote {out} ({out.stat().st_size:,} bytes; {L} layers, embedding {E}, "
          f"{H} heads / {HKV} kv, ffn {FF}, vocab {n_vocab:,}, seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
