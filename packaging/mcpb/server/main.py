"""The bundle's entry point: run memdex where it is installed, e.g. `python server/main.py serve --workspace DIR`.

Claude Desktop starts the bundle through `mcp_config` in manifest.json instead: uvx runs the memdex wheel that
`make mcpb` puts beside this file (memdex_mcp-<version>-py3-none-any.whl), so no release on PyPI is needed.
This file is for hosts that run the entry point with a Python that has memdex installed.
"""

import sys

try:
    from memdex.server.cli import main
except ImportError:
    sys.exit("memdex is not installed for this Python: `pip install memdex-mcp`, or let uvx run the wheel in this "
             "bundle's server/ folder: `uvx --from <that wheel> memdex serve`")

sys.exit(main())
