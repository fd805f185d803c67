"""The Docker build context of a folder, as Docker computes it from ``.dockerignore``.

The rules are matched by the Docker SDK for Python (``docker.utils.exclude_paths``,
a port of Docker's own matcher: ``!`` exceptions, the last matching rule wins,
``**``, a leading ``/`` and ``.``/``..`` cleaned away, an excluded folder's
contents excluded unless an exception names a path under it). Reading the file
follows Docker's reader: a line whose first character is ``#`` is a comment, blank
lines are skipped, a UTF-8 byte order mark is dropped. Like the classic builder,
the SDK always keeps ``Dockerfile`` and ``.dockerignore`` in the context.

Also here: the sources of the Dockerfile's ``COPY``/``ADD`` instructions, and which
of them the context lacks (the check of tests/hosting/test_dockerfile.py).
"""

from __future__ import annotations

import json
import posixpath
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from docker.utils import exclude_paths
from docker.utils.fnmatch import fnmatch

#: Characters that make a COPY source a pattern (Go's filepath.Match: ``*`` stays in a folder).
GLOB = re.compile(r"[*?\[]")


def dockerignore_rules(text: str) -> list[str]:
    """The rules of a ``.dockerignore`` file's ``text``, comments and blank lines dropped."""
    lines = text.removeprefix("\ufeff").splitlines()
    return [line.strip() for line in lines if not line.startswith("#") and line.strip()]


def context_files(root: Path, dockerignore: str | None = None) -> set[str]:
    """Files of ``root`` that Docker sends as the build context (POSIX paths from ``root``).

    Parameters
    ----------
    root : Path
        The build context folder.
    dockerignore : str, optional
        The ``.dockerignore`` text to apply; default: ``root/.dockerignore``'s (none: all).

    Returns
    -------
    set of str
        Regular files (and symbolic links to them) in the context, without folders.
    """
    if dockerignore is None:
        ignore_file = root / ".dockerignore"
        dockerignore = ignore_file.read_text(encoding="utf-8") if ignore_file.exists() else ""
    paths = exclude_paths(str(root), dockerignore_rules(dockerignore))
    return {Path(path).as_posix() for path in paths if (root / path).is_file()}


def copy_context(root: Path, files: Iterable[str], destination: Path) -> Path:
    """Copy ``files`` of ``root`` (a computed context) into ``destination``; return it."""
    for name in files:
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return destination


def copy_arguments(arguments: str) -> tuple[list[str], list[str]]:
    """``(options, words)`` of a ``COPY``/``ADD`` instruction's arguments.

    The words are the sources then the destination, from the shell form
    (``COPY --chown=1:1 a b dest/``) or the JSON form (``COPY ["a", "dest/"]``).
    """
    words = arguments.split()
    count = next((i for i, word in enumerate(words) if not word.startswith("--")), len(words))
    options, rest = words[:count], words[count:]
    if rest and rest[0].startswith("["):
        return options, [str(word) for word in json.loads(" ".join(rest))]
    return options, rest


def copy_sources(instructions: Iterable[tuple[str, str]]) -> list[str]:
    """Context paths of every ``COPY``/``ADD`` source (not ``--from=`` stage copies, not URLs)."""
    sources = []
    for word, arguments in instructions:
        if word not in ("COPY", "ADD"):
            continue
        options, words = copy_arguments(arguments)
        if any(option.startswith("--from=") for option in options):
            continue
        for source in words[:-1]:
            if "://" not in source:
                sources.append(posixpath.normpath(source.lstrip("/")))
    return sources


def missing_sources(sources: Iterable[str], files: set[str]) -> list[str]:
    """The ``sources`` the context ``files`` lack: a file that is not in it, a folder or
    pattern with no file in it."""
    missing = []
    for source in sources:
        if source == ".":
            present = bool(files)
        elif GLOB.search(source):
            present = any(fnmatch(name, source) for name in files)
        else:
            present = source in files or any(name.startswith(f"{source}/") for name in files)
        if not present:
            missing.append(source)
    return missing
