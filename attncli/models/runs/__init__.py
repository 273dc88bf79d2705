"""Running a model by its kind: a text through an encoder, a decoder or an encoder–decoder as the results the rest of
attn reads, generation, batches, a corpus."""
