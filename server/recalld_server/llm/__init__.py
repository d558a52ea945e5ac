"""Language-model adapters behind the domain's Summarizer and Extractor ports."""
