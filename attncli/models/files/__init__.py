"""Reading model files as untrusted input: a folder's JSON and sizes, safetensors by hand, GGUF metadata and tensors,
the ggml quant types."""
