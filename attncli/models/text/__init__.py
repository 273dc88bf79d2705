"""A model's own text handling: its tokenizer (a folder's or a GGUF file's) and its chat template."""
