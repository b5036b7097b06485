"""Image search: embed a gallery, reduce with PCA, index with FAISS, query by photo over HTTP or the CLI."""
