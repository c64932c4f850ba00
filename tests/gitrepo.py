"""A tiny builder for real git repositories in tmp_path (tests only)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path


class GitRepo:
    """Real git repository with helpers to write files and commit with controlled dates."""

    def __init__(self, path: Path, branch: str = "main") -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self._clock = 1_700_000_000
        self.git("init", "-q", "-b", branch)

    def git(self, *args: str, input: str | None = None, check: bool = True) -> str:
        env_date = f"@{self._clock} +0000"  # ("@": a Unix time whatever its digits)
        proc = subprocess.run(
            ["git", *args],
            cwd=self.path,
            input=input,
            capture_output=True,
            text=True,
            env=_env(env_date),
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
        return proc.stdout

    def tick(self, seconds: int = 3600) -> None:
        self._clock += seconds

    def write(self, rel: str, content: str | bytes) -> None:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)

    def delete(self, rel: str) -> None:
        (self.path / rel).unlink()

    def commit(self, message: str, files: dict[str, str | bytes | None] | None = None) -> str:
        """Write ``files`` (None deletes), commit everything with ``message``, return the sha."""
        self._stage(files)
        self.tick()
        self.git("commit", "-q", "--allow-empty", "-F", "-", input=message)
        return self._committed()

    def commit_sharing_an_abbreviation(self, message: str, files: dict[str, str | bytes | None] | None = None
                                       ) -> tuple[str, bytes]:  # fmt: skip
        """As :meth:`commit`, at a time (up to a few weeks on) where the commit's id shares its first
        7 hex digits with a blob's: the sha and that blob's content (not written; many are tried)."""
        import hashlib

        def oid(kind: bytes, data: bytes) -> str:
            return hashlib.sha1(kind + b" %d\0" % len(data) + data).hexdigest()

        blobs: dict[str, bytes] = {}
        for i in range(40_000):
            data = f"payload {i}\n".encode()
            blobs.setdefault(oid(b"blob", data)[:7], data)
        self._stage(files)
        tree, parent = self.git("write-tree").strip(), self.head()
        env = _env("")

        def body(when: int) -> bytes:
            who = f"{{}} <{{}}> {when} +0000"
            return (f"tree {tree}\nparent {parent}\n"
                    f"author {who.format(env['GIT_AUTHOR_NAME'], env['GIT_AUTHOR_EMAIL'])}\n"
                    f"committer {who.format(env['GIT_COMMITTER_NAME'], env['GIT_COMMITTER_EMAIL'])}\n\n"
                    f"{message.rstrip()}\n").encode()  # fmt: skip

        times = range(self._clock + 1, self._clock + 4_000_000)
        self._clock = next(t for t in times if oid(b"commit", body(t))[:7] in blobs)
        sha = self.git("hash-object", "-w", "-t", "commit", "--stdin", input=body(self._clock).decode()).strip()
        self.git("reset", "-q", "--soft", sha)
        return sha, blobs[sha[:7]]

    def _stage(self, files: dict[str, str | bytes | None] | None) -> None:
        """Write ``files`` (None deletes) and stage everything."""
        for rel, content in (files or {}).items():
            if content is None:
                self.delete(rel)
            else:
                self.write(rel, content)
        self.git("add", "-A")

    def revert(self, *shas: str, message: str | None = None) -> str:
        """``git revert`` (newest first as given); optionally with a custom message."""
        self.tick()
        self.git("revert", "--no-edit", "--no-commit", *shas)
        if message is None:
            subj = self.git("log", "-1", "--format=%s", shas[0]).strip()
            body = "\n".join(f"This reverts commit {s}." for s in shas)
            message = f'Revert "{subj}"\n\n{body}\n'
        self.git("commit", "-q", "--allow-empty", "-F", "-", input=message)
        return self._committed()

    def revert_on_branch(self, original: str, branch: str = "rv", start: str = "main") -> str:
        """A revert of ``original`` on a new ``branch`` from ``start`` (a revert PR's branch), back
        on ``start`` afterwards: the revert's sha."""
        self.checkout("-b", branch, start)
        self.tick()
        revert = self.revert(original)
        self.checkout(start)
        return revert

    def head(self, ref: str = "HEAD") -> str:
        return self.git("rev-parse", ref).strip()

    def _committed(self) -> str:
        """The commit just made, read from the files ``git commit`` wrote (HEAD, then its branch):
        one process less per commit, thousands in the suite; ``rev-parse`` where they do not say
        (a packed ref, a worktree's ``.git`` file)."""
        git_dir = self.path / ".git"
        try:
            head = (git_dir / "HEAD").read_text().strip()
            sha = (git_dir / head[5:]).read_text().strip() if head.startswith("ref: ") else head
        except OSError:
            return self.head()
        return sha if _OBJECT_ID.fullmatch(sha) else self.head()

    def checkout(self, *args: str) -> None:
        self.git("checkout", "-q", *args)


_OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def _env(date: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_AUTHOR_NAME": "Test Author",
            "GIT_AUTHOR_EMAIL": "author@example.com",
            "GIT_COMMITTER_NAME": "Test Committer",
            "GIT_COMMITTER_EMAIL": "committer@example.com",
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_DATE": date,
            "GIT_CONFIG_NOSYSTEM": "1",
        }
    )
    return env


def run_git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``git args`` in ``cwd``, its output as text; fails the test on an error unless ``check`` is off."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert not check or proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc
