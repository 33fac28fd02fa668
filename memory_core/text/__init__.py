"""Pure text processing, no I/O: Markdown and transcripts cut into line-addressed chunks, queries into terms.

Every other part builds on these: the index stores chunks, both stores and the search side take terms.
"""
