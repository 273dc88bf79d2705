"""The network itself: the loaded `Model` and its `Weights`, the families' blocks, one attention, one forward loop, the
next-token head, threads and read-ahead."""
