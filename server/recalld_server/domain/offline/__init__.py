"""The model-free Summarizer and Extractor: the offline twins of `llm/`."""
