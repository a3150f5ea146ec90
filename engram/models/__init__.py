"""The adapters of machine-learned models other than the embedder: the model store (download, verify, import),
the cross-encoder reranker, natural language inference, and the LLM port."""
