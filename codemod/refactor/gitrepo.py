"""The git side of `decouple refactor`, through GitPython.

Everything that writes happens in a temporary linked work tree (`git worktree add`): the
user's work tree, index and checked-out branch are never touched, so "return to the
user's branch and restore their uncommitted changes" holds by construction. Branches are
only ever created (never moved, reset or deleted) and nothing is pushed.

No hook runs in the tool's own git commands (`worktree add`/`remove`, `checkout`, `add`,
`commit`, `branch`): each runs with `-c core.hooksPath=<an empty folder>`, which wins over any
configuration (`--no-verify` alone still runs `prepare-commit-msg`, which can change the
message, and `post-commit`; `post-checkout` runs on every checkout), and none starts git's
automatic maintenance (`maintenance.auto=false`, `gc.auto=0`: a commit would otherwise repack
the user's object store). A commit is made on a
detached HEAD and the branch created at it afterwards, so a commit that fails (no
`user.email`, broken signing) leaves no branch behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

try:
    import git
except ImportError:  # GitPython refuses to import when there is no git executable
    GIT_FOUND = False
else:
    GIT_FOUND = True


class GitError(Exception):
    """Not a repository, an unknown ref, a refused branch name, a failed git command."""


@dataclass
class Repo:
    repo: git.Repo
    # The paths of each commit's tree (asked once per commit): see `blob`.
    _paths: dict[str, frozenset[str]] = field(default_factory=dict, init=False, repr=False)

    @property
    def root(self) -> str:
        tree = self.repo.working_tree_dir
        if tree is None:
            raise GitError(f"{self.repo.git_dir} is a bare repository: there is no work tree to refactor")
        return os.path.realpath(tree)

    # --- reading ---------------------------------------------------------------------------

    def resolve(self, ref: str) -> str:
        try:
            return self.repo.commit(ref).hexsha
        except (git.BadName, ValueError, git.GitCommandError) as e:
            raise GitError(f"unknown git ref {ref!r}: {e}") from None

    def blob(self, commit: str, path: str) -> bytes | None:
        """The bytes of `path` (repo-relative, POSIX) at `commit` (an object id); None when absent
        or not a file."""
        if path not in self._paths_at(commit):  # each lookup below costs ~1 ms of git round trips
            return None
        try:
            obj = self.repo.commit(commit).tree / path
        except KeyError:
            return None
        if obj.type != "blob" or obj.mode == 0o120000:  # symlinks are not source files
            return None
        return obj.data_stream.read()

    def _paths_at(self, commit: str) -> frozenset[str]:
        """Every path of `commit`'s tree, from one `git ls-tree`: an allowlist of 300,000 entries,
        most of them gone, is then answered in seconds (one lookup each took 5 minutes)."""
        if commit not in self._paths:
            listing = self.repo.git.ls_tree("-r", "-z", "--full-tree", "--name-only", commit)
            self._paths[commit] = frozenset(p for p in listing.split("\0") if p)
        return self._paths[commit]

    def dirty_paths(self) -> list[str]:
        """Tracked files with staged or unstaged changes (untracked files do not count:
        nothing here ever adds them). Read only: `git diff` (GitPython's `is_dirty`) would
        refresh and rewrite the user's index, running their `post-index-change` hook;
        `status --no-optional-locks` does not."""
        out = self.repo.git.execute(
            ["git", "--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=no", "--no-renames"]
        )
        return sorted({entry[3:] for entry in out.split("\0") if entry})

    def branch_head(self, name: str) -> str | None:
        head = next((h for h in self.repo.heads if h.name == name), None)
        return head.commit.hexsha if head is not None else None

    def tree(self, ref: str) -> str:
        """The id of `ref`'s tree (what its files are)."""
        return self.repo.commit(self.resolve(ref)).tree.hexsha

    def commit_info(self, ref: str) -> tuple[str, str, list[str]]:
        """(sha, full message, parent shas) of `ref`."""
        c = self.repo.commit(self.resolve(ref))
        # GitPython types the message `str | bytes`; it decodes with errors="replace", so it is str.
        return c.hexsha, c.message, [p.hexsha for p in c.parents]  # type: ignore[return-value]

    def list_at(self, commit: str, rel: str) -> list[str] | None:
        """Files at `commit` under `rel` (a file or a folder); None when `rel` is not there."""
        try:
            obj = self.repo.commit(commit).tree / rel if rel not in ("", ".") else self.repo.commit(commit).tree
        except KeyError:
            return None
        if obj.type == "blob":
            return [rel]
        # Without as_edge, traverse() yields the objects (GitPython's annotation adds the edge
        # tuples), and a tree entry's path is str (annotated PathLike).
        return sorted(b.path for b in obj.traverse() if b.type == "blob")  # type: ignore[union-attr,misc]

    def check_branch_name(self, name: str) -> None:
        try:
            self.repo.git.check_ref_format("--branch", name)
        except git.GitCommandError:
            raise GitError(f"{name!r} is not a valid branch name") from None

    # --- writing, in a temporary linked work tree ---------------------------------------------

    @contextmanager
    def scratch_worktree(self, commit: str) -> Iterator[Worktree]:
        """A detached linked work tree at `commit`, removed (and pruned) afterwards."""
        parent = tempfile.mkdtemp(prefix="decouple-refactor-")
        path = os.path.join(parent, "tree")
        no_hooks = os.path.join(parent, "no-hooks")  # empty: core.hooksPath finds no hook there
        os.mkdir(no_hooks)
        try:
            try:
                _run(self.repo, no_hooks, "worktree", "add", "--detach", "--quiet", path, commit)
            except git.GitCommandError as e:
                raise GitError(f"cannot create a temporary work tree: {_stderr(e)}") from None
            yield Worktree(git.Repo(path), os.path.realpath(path), no_hooks)
        finally:
            try:
                _run(self.repo, no_hooks, "worktree", "remove", "--force", path)
            except git.GitCommandError:
                pass
            shutil.rmtree(parent, ignore_errors=True)
            try:
                self.repo.git.worktree("prune")
            except git.GitCommandError:
                pass


# A commit ends by running `git maintenance run --auto` (`git gc --auto` before git 2.29), which
# can repack and prune the user's object store: the tool's own commands leave it as it was.
_NO_MAINTENANCE = ("-c", "maintenance.auto=false", "-c", "gc.auto=0")


def _run(repo: git.Repo, no_hooks: str, *args: str) -> str:
    """`git ARGS` in `repo` with no hook and no automatic maintenance (see the module docstring)."""
    return repo.git.execute(["git", "-c", f"core.hooksPath={no_hooks}", *_NO_MAINTENANCE, *args])


@dataclass
class Worktree:
    repo: git.Repo
    root: str
    no_hooks: str  # an empty folder: the hooks path of every command here

    def switch(self, ref: str) -> None:
        try:
            _run(self.repo, self.no_hooks, "checkout", "--quiet", "--detach", ref)
        except git.GitCommandError as e:
            raise GitError(f"cannot check out {ref}: {_stderr(e)}") from None

    def commit_branch(self, name: str, paths: list[str], message: str) -> str:
        """Stage exactly `paths`, commit them on the detached HEAD, then create branch `name`
        at that commit (refusing an existing name). No hook runs: the edit is verified by the
        tool and a hook that rewrites files or the message would make the A/B prove something
        else. A failed commit creates no branch."""
        with tempfile.NamedTemporaryFile("wb", prefix="decouple-msg-", delete=False) as f:
            f.write(message.encode("utf-8"))
        try:
            _run(self.repo, self.no_hooks, "add", "--", *paths)
            _run(self.repo, self.no_hooks, "commit", "--quiet", "--no-verify", "--cleanup=verbatim", "-F", f.name)
        except git.GitCommandError as e:
            raise GitError(f"git commit failed (no branch was made): {_stderr(e)}") from None
        finally:
            os.unlink(f.name)
        sha = self.repo.head.commit.hexsha
        try:
            _run(self.repo, self.no_hooks, "branch", "--no-track", name, sha)
        except git.GitCommandError as e:
            raise GitError(f"cannot create branch {name}: {_stderr(e)}") from None
        return sha


def _stderr(e: git.GitCommandError) -> str:
    text = (e.stderr or "").strip()
    text = text.removeprefix("stderr:").strip().strip("'").strip()
    return text or str(e)


def open_repo(folder: str) -> Repo:
    """The repository enclosing `folder`; GitError when there is none, or no git."""
    if not GIT_FOUND:
        raise GitError("git not found: this command needs git on PATH")
    try:
        return Repo(git.Repo(folder, search_parent_directories=True))
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitError(f"{os.path.abspath(folder)} is not inside a git work tree") from None
