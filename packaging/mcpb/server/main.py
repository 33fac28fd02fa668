"""The bundle's entry point: run memdex where it is installed, e.g. `python server/main.py serve --workspace DIR`.

Claude Desktop starts the bundle through `mcp_config` in manifest.json instead (uvx fetches the memdex release
from PyPI); this file is for hosts that run the entry point with a Python that has memdex installed.
"""

import sys

try:
    from memdex.server.cli import main
except ImportError:
    sys.exit("memdex is not installed for this Python: `pip install memdex`, or let uvx run it: `uvx memdex serve`")

sys.exit(main())
