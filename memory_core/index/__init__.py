"""Keeping the index in step with the files: prepare and write changed files, vectors after, rebuilds.

Data flows one way: files (:mod:`..workspace`) -> chunks (:mod:`..text`) -> embeddings
(:mod:`..embeddings`) -> a store (through :mod:`..stores.base`). Listeners learn what changed from
:mod:`.changes`.
"""
