#!/usr/bin/env python3
"""Converts the default model (Gemma 3 270M, GGUF Q4_K_M) into the safetensors directory vLLM
loads: ``vllm-model.py GGUF OUT_DIR``. Run by ``scripts/vllm-env``.

transformers reads a GGUF file but keeps the weights packed, and a packed model cannot be
saved; so the weights are read dequantized, copied into a plain model built from the same
config, and saved in bfloat16 (about 540 MB). The GGUF carries no chat template, so Gemma's turn
format is written into the tokenizer here, which lets vLLM's OpenAI server answer chat requests
without a template file. ``OUT_DIR/.complete`` is written last: a directory without it is
incomplete and is made again.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

# Gemma's turn format: each message as `<start_of_turn>{role}\n{text}<end_of_turn>\n`, the
# assistant's role spelt `model`, a system message folded into the first user turn, and the
# model's turn opened at the end when a reply is wanted.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- set system = namespace(text='') -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}{%- set system.text = message['content'] + '\n\n' -%}"
    "{%- else -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else 'user' -%}"
    "{{ '<start_of_turn>' + role + '\n' + system.text + (message['content'] or '') + '<end_of_turn>\n' }}"
    "{%- set system.text = '' -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)


def convert(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GgufConfig

    folder, name = str(gguf.parent), gguf.name
    packed = AutoModelForCausalLM.from_pretrained(
        folder,
        gguf_file=name,
        quantization_config=GgufConfig(gguf_file=name, dequantize=True),
        dtype=torch.float32,
    )
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(packed.state_dict(), strict=False)
    # Tied embeddings may be absent from one side; anything else means a wrong conversion.
    missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        raise SystemExit(f"weights do not line up: missing {missing[:5]}, unexpected {unexpected[:5]}")
    plain = plain.to(torch.bfloat16)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    plain.save_pretrained(partial)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(partial)
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    (out / ".complete").write_text(f"converted from {gguf}\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: vllm-model.py GGUF OUT_DIR")
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
