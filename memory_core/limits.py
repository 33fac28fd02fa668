"""The hard limits of memdex's tools, in one place.

Settings validation, the engine, the MCP tool schemas and the tool descriptions the model reads
all take these numbers from here (a test checks the descriptions), so they can never disagree.
"""

from __future__ import annotations

MAX_RESULTS = 50  # memory_search maxResults
MAX_CANDIDATES = 200  # chunks each side of a hybrid search fetches at most
MAX_READ_LINES = 200  # lines in one memory_get answer
MAX_READ_CHARS = 16_000  # characters in one memory_get answer
MAX_APPEND_BYTES = 16 * 1024  # bytes in one memory_append
MAX_EDIT_BYTES = 16 * 1024  # bytes of memory_edit's old text, and of its new text, at most
MAX_HEADING_CHARS = 200  # memory_append heading, at most
MAX_QUERY_CHARS = 8_000  # memory_search query, at most: a question or a pasted paragraph (CISI asks up to 2,023), not a document
MAX_PATH_CHARS = 1_024  # a path argument (memory_get path, pathPrefix), at most; refused before any file is touched
MAX_PATH_PARTS = 32  # folders and file name of such a path, at most
SNIPPET_CHARS = 700  # characters of one search result's snippet, at most
MIN_SNIPPET_CHARS = 120  # a further result gets at least this much room, or is left out
MIN_ANSWER_CHARS = 200  # memory_search maxChars, at least
MAX_ANSWER_CHARS = 12_000  # memory_search maxChars, at most
# An answer's snippets, at their size as sent (JSON inside JSON), and its results' other fields (path, lines, scores,
# hash: about RESULT_FIELDS_CHARS and the path each; with explain the explanation) take at most ANSWER_JSON_CHARS.
# The tool sends the answer twice (data and text), and hosts refuse a tool result much over 40,000 characters,
# which many short results passed within maxChars (50 one-line notes: 42,781; of quotes and backslashes: 60,348).
RESULT_FIELDS_CHARS = 240
EXPLAIN_FIELDS_CHARS = 160  # with explain, each result's places and factors besides the reason its lines were chosen
ANSWER_JSON_CHARS = 17_500
MAX_VECTOR_PARTS = 8  # vectors of one chunk at most (embedding.window_tokens); fixes the vector rowid layout
MIN_AUTH_TOKEN_CHARS = 16  # auth_token, at least: a shorter bearer token is refused at start
CONSOLIDATE_CHARS = 40_000  # daily-log text one memory_consolidate prompt hands over, at most (the rest waits)
HOOK_CONTEXT_CHARS = 9_000  # `memdex hook session-start`'s context: Claude Code cuts hook output over 10,000
