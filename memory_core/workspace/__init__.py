"""The memory files on disk: which files are memory, the path policy, reads, appends and the watcher.

Everything that touches the user's Markdown goes through :class:`~.files.MemoryFile` (opened one component
at a time, never through a symlink). Nothing here knows about the index.
"""
