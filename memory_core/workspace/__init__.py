"""The memory files on disk: which files are memory, the path policy, reads, appends and the watcher.

Everything that touches the user's Markdown goes through :class:`~.memory_file.MemoryFile` (opened one
component at a time, never through a symlink). :mod:`.files` holds the :class:`~.files.Workspace` (which
files are memory) and :mod:`.spelling` how a folder lists a name. Nothing here knows about the index.
"""
