"""Pure scoring and packing: fusion of dense and keyword evidence, BM25, reranking, budgets."""
