"""Opening a model by what the user types: a folder, a GGUF file, a Hugging Face, Ollama, LM Studio or llama.cpp name,
and the catalog `attn models` lists."""
