"""Answering a query: the keyword and vector sides, fusion, snippets within a budget, an optional reranker.

Reads the index only through the store seam (:mod:`..stores.base`) and never imports :mod:`..index`.
"""
