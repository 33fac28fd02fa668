"""Review mode: agent edits of MEMORY.md wait as proposals until a person applies or rejects them.

Each proposal is one JSON file in ``.memdex/proposals/`` (hidden: never indexed): the file, the text to
replace and its replacement, the hash of the file it was checked against, who proposed it and when.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path
from time import time_ns

from ..errors import InputError
from .editor import replace_text
from .history import STATE_DIR, Change, state_dir
from .memory_file import MemoryFile, content_hash

FOLDER = "proposals"


@dataclass(frozen=True)
class Proposal:
    """An edit waiting for review: in ``path`` (whose hash was ``base``), ``old`` becomes ``new``."""

    id: str
    time: str
    client: str
    path: str
    old: str
    new: str
    base: str
    start_line: int
    offset: int  # of ``old`` in the file at ``base``, in bytes
    order: int  # when it was made (ns): proposals are reviewed in the order they were made

    def diff(self, data: bytes | None) -> str:
        """The proposal as a unified diff of the whole lines it touches in ``data`` (the file now), or of the
        bare texts when the file is no longer the one it was proposed against."""
        old, new = self.old.encode("utf-8"), self.new.encode("utf-8")
        if data is not None and data[self.offset : self.offset + len(old)] == old:
            first = data.rfind(b"\n", 0, self.offset) + 1
            end = data.find(b"\n", self.offset + len(old))
            end = len(data) if end == -1 else end
            old, new = data[first:end], data[first : self.offset] + new + data[self.offset + len(old) : end]
        before = old.decode("utf-8", errors="replace").splitlines()
        after = new.decode("utf-8", errors="replace").splitlines()
        lines = difflib.unified_diff(before, after, f"a/{self.path}", f"b/{self.path}", n=0, lineterm="")
        return "\n".join(line if not line.startswith("@@") else f"@@ line {self.start_line} @@" for line in lines)


class Proposals:
    """The pending proposals of one workspace."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / STATE_DIR / FOLDER

    def add(self, change: Change, *, time: str, client: str) -> Proposal:
        """Keep ``change`` (checked, not written) as a proposal."""
        proposal = Proposal(
            secrets.token_hex(4), time, client, change.path, change.old, change.new, change.before, change.start_line,
            change.offset, time_ns(),
        )
        folder = state_dir(self.root) / FOLDER
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
        temp = folder / f".{proposal.id}.tmp"
        temp.write_text(json.dumps(asdict(proposal), ensure_ascii=False), encoding="utf-8")
        os.replace(temp, folder / f"{proposal.id}.json")
        return proposal

    def pending(self) -> list[Proposal]:
        """Every pending proposal, oldest first."""
        found = []
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self.folder):
                if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                    with contextlib.suppress(OSError, ValueError, TypeError):
                        found.append(Proposal(**json.loads(Path(entry.path).read_text(encoding="utf-8"))))
        return sorted(found, key=lambda p: p.order)

    def get(self, proposal_id: str) -> Proposal:
        for proposal in self.pending():
            if proposal.id == proposal_id.strip():
                return proposal
        raise InputError(f"no pending proposal {proposal_id!r}; `memdex review` lists them")

    def remove(self, proposal_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.folder / f"{proposal_id}.json")


def apply(file: MemoryFile, proposal: Proposal, produced: dict[str, set[str]]) -> Change:
    """Make ``proposal``'s edit of ``file`` if the file still has the hash it was proposed against.

    ``produced`` spans one review: per file, its hash before the review and the hashes the proposals
    applied in it left. A proposal against the hash before the review also applies to one of those, so
    proposals made one after the other against the same file apply in order.
    """
    now = content_hash(file.read_bytes())
    ours = produced.setdefault(proposal.path, {now})
    expected = now if proposal.base == now or (proposal.base in ours and now in ours) else proposal.base
    try:
        change = replace_text(file, proposal.old, proposal.new, expected)
    except InputError as exc:
        raise InputError(f"{exc} (proposal {proposal.id}: reject it, or ask the agent to propose it again)") from None
    ours.add(change.after)
    return change
