"""Put a GGUF file in an Ollama model store, as `ollama pull` leaves it, to try `attn --model NAME:TAG` offline.

    python tools/ollama_store.py FILE.gguf NAME:TAG STORE      then   OLLAMA_MODELS=STORE attn show ... --model NAME:TAG

NAME may also be USER/NAME, or HOST/USER/REPO as `ollama pull hf.co/USER/REPO:QUANT` names a Hub repo.

Writes STORE/blobs/sha256-<the file's SHA-256> (a hard link to the file where the file system allows, else a
copy: attn refuses a blob that is a symbolic link out of its store) and the manifest
STORE/manifests/registry.ollama.ai/library/NAME/TAG (HOST/USER/REPO/TAG for a hosted name) naming it as the model layer
(mediaType application/vnd.ollama.image.model), beside an empty params layer as Ollama writes one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path


def main() -> None:
    source, name, store = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    model, _, tag = name.partition(":")
    digest = hashlib.sha256()
    with open(source, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    blob = store / "blobs" / f"sha256-{digest.hexdigest()}"
    blob.parent.mkdir(parents=True, exist_ok=True)
    if not blob.exists():
        try:
            os.link(source, blob)
        except OSError:
            shutil.copyfile(source, blob)
    params = b"{}"
    (store / "blobs" / f"sha256-{hashlib.sha256(params).hexdigest()}").write_bytes(params)
    layers = [
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest.hexdigest()}"},
        {"mediaType": "application/vnd.ollama.image.params", "digest": f"sha256:{hashlib.sha256(params).hexdigest()}"},
    ]
    parts = model.split("/")  # NAME, USER/NAME, or HOST/USER/REPO (`ollama pull hf.co/USER/REPO:QUANT`)
    where = {1: ["registry.ollama.ai", "library"], 2: ["registry.ollama.ai"], 3: []}[len(parts)] + parts
    manifest = store.joinpath("manifests", *where, tag or "latest")
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
