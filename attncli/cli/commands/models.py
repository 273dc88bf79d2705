"""`attn models`: every model attn can open on this machine, one row each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from attncli.cli.options import Out, options, row
from attncli.cli.output import emit
from attncli.cli.text import warn

Paths = Annotated[list[Path] | None, row("path", metavar="DIR")]


@options(out=Out, skip=("precision",), writes=("Records",))
def models(out: Out, path: Paths = None) -> None:
    """List every model attn can open on this machine, offline.

    Looks in the Hugging Face cache, llama.cpp's -hf cache (LLAMA_CACHE), Ollama's store (OLLAMA_MODELS), LM
    Studio's and each --path DIR, reading only headers (GGUF metadata, config.json, safetensors headers): the name
    --model takes, source, family, parameters, quant, file size, and whether attn supports it (why not, in
    words). -f json gives rows {name, source, path, family, parameters, quant, bytes, supported, why}.
    """
    from attncli import api  # late: start-up (not for --help)

    listed = api.catalog(path=path or ())
    warn(listed)
    emit(listed.document, out)
