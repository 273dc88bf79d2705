"""One module per `attn` command, each defining the function of the command's name: its options parsed into
the groups of cli/options.py, the pipeline called, the result handed as a document to `emit`.

cli/app.py lists them and imports one only when it is run or its help is shown (cli/lazy.py). Each imports
the machinery of its run (NumPy, the pipeline, the output, the renderers; the models layer only with --model)
in its body, so that its --help loads none of it, and `attn variants` no NumPy.
"""
