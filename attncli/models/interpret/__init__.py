"""What attn asks of a model beyond its attention weights: the logit lens, contribution maps, and the causal tools
(ablation, activation patching, direct logit attribution, knockout)."""
