"""`attn explore`: a full-screen terminal app to move through one run's attention with the keyboard.

- `state.py`: the `Explorer`, what is being looked at (the run, the head, the layer, the focused cell) and the
  switches the keys make; it recomputes through the pipeline (or the model) and knows nothing of screens;
- `panels.py`: the Rich renderables the app shows (the matrix with its cursor, the focused row as bars with
  the formula of its weights, the status and key lines, the heads grid's cells);
- `app.py`: the Textual app, its keys and its screens (help, heads overview, file prompt).

Only `attn explore` imports this package's `app` (and Textual with it): every other command starts without it.
"""
