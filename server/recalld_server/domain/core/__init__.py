"""The vocabulary every package speaks: the model, errors, ids, text rules, stages and the ports."""
