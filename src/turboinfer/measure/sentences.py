"""Real English sentences for text models: the standard library's own documentation strings."""

from __future__ import annotations

import importlib
import inspect
import re

from turboinfer.core.errors import DataUnavailable

MODULES = (
    "argparse", "asyncio", "calendar", "collections", "concurrent.futures", "contextlib", "csv", "datetime",
    "decimal", "difflib", "email.message", "fractions", "functools", "heapq", "http.client", "http.server",
    "imaplib", "inspect", "ipaddress", "itertools", "json", "logging", "mailbox", "mimetypes", "pathlib",
    "pickle", "pprint", "queue", "random", "shutil", "smtplib", "socket", "sqlite3", "statistics",
    "string", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "typing", "unittest",
    "urllib.parse", "urllib.request", "uuid", "wave", "zipfile",
)  # fmt: skip
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
PLAIN = re.compile(r"^[A-Z][A-Za-z0-9 ,;:'\-()]+[.!?]$")


def docstrings(module_name: str) -> list[str]:
    """The docstrings of a module and of its public classes and functions, in definition order."""
    module = importlib.import_module(module_name)
    texts = [inspect.getdoc(module) or ""]
    for name, value in vars(module).items():
        if not name.startswith("_") and (inspect.isclass(value) or inspect.isfunction(value)):
            texts.append(inspect.getdoc(value) or "")
    return texts


def split_sentences(text: str, min_words: int = 6, max_words: int = 60) -> list[str]:
    """Plain prose sentences of text (no code, no doctest lines), min_words..max_words long."""
    flat = " ".join(line.strip() for line in text.splitlines() if not line.strip().startswith(">>>"))
    out = []
    for sentence in SENTENCE_END.split(flat):
        sentence = sentence.strip()
        if PLAIN.match(sentence) and min_words <= len(sentence.split()) <= max_words:
            out.append(sentence)
    return out


def real_sentences(count: int) -> list[str]:
    """The first `count` distinct prose sentences from the standard library's docstrings (deterministic)."""
    seen: dict[str, None] = {}
    for module_name in MODULES:
        for text in docstrings(module_name):
            for sentence in split_sentences(text):
                seen.setdefault(sentence)
                if len(seen) >= count:
                    return list(seen)
    raise DataUnavailable(f"only {len(seen)} sentences found in the standard library, {count} asked for")
