"""The secret-scrubbing corpus (tests/data/secrets): fake secrets generated from templates, innocent texts."""

from __future__ import annotations

import random
import re
import string
import uuid
from dataclasses import dataclass
from pathlib import Path

from mnemonic import Mnemonic

CORPUS_DIR = Path(__file__).resolve().parent.parent / "data" / "secrets"
SEED = 20240605

_ALPHABETS = {
    "hex": "0123456789abcdef",
    "HEX": "0123456789ABCDEF",
    "alnum": string.ascii_letters + string.digits,
    "UPALNUM": string.ascii_uppercase + string.digits,
    "alpha": string.ascii_letters,
    "lower": string.ascii_lowercase,
    "digits": string.digits,
    "b64": string.ascii_letters + string.digits + "+/",
    "b64url": string.ascii_letters + string.digits + "_-",
    "bech32": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
}
_PLACEHOLDER = re.compile(r"\{(?P<name>[A-Za-z0-9]+)(?::(?P<n>[0-9]+))?\}")
_SECRET = re.compile(r"«(.*?)»", re.DOTALL)


@dataclass(frozen=True)
class SecretCase:
    """One corpus line: the text to save, the secrets in it, and the kinds the scrubber must report."""

    line: int
    kinds: frozenset[str]
    text: str
    secrets: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.line}-{'+'.join(sorted(self.kinds))}"


def _fill(template: str, rng: random.Random) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group("name")
        if name == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if name == "bip39" and m.group("n") is not None:  # a seed phrase of n words with a valid checksum
            return str(Mnemonic("english").to_mnemonic(rng.randbytes(int(m.group("n")) * 4 // 3)))
        if name not in _ALPHABETS or m.group("n") is None:
            return m.group(0)  # literal braces, e.g. "{ODBC Driver 18}"
        return "".join(rng.choice(_ALPHABETS[name]) for _ in range(int(m.group("n"))))

    return _PLACEHOLDER.sub(one, template)


def load_secrets(seed: int = SEED) -> list[SecretCase]:
    """Every line of secrets.txt with its placeholders filled (same seed, same secrets)."""
    rng = random.Random(seed)
    cases = []
    for number, raw in enumerate((CORPUS_DIR / "secrets.txt").read_text().splitlines(), start=1):
        if not raw.strip() or raw.startswith("#"):
            continue
        kinds, template = raw.split("\t", 1)
        marked = _fill(template.replace("\\n", "\n"), rng)
        secrets = tuple(_SECRET.findall(marked))
        assert secrets, f"secrets.txt line {number} marks no secret with «»"
        text = marked.replace("«", "").replace("»", "")
        cases.append(SecretCase(number, frozenset(kinds.split(",")), text, secrets))
    return cases


def load_innocent() -> list[str]:
    """The innocent texts of innocent.txt, which the scrubber must leave exactly as they are."""
    blocks = (CORPUS_DIR / "innocent.txt").read_text().split("\n%%\n")
    return [block.strip("\n") for block in blocks if block.strip()]


def distinctive_slices(secret: str, width: int = 12) -> list[str]:
    """Every ``width``-character slice of a secret that is specific to it (not mostly one repeated character,
    not part of a well-known fixed prefix such as "-----BEGIN RSA PRIVATE KEY-----")."""
    fixed = ("-----BEGIN", "-----END", "PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAA", "pypi-AgEIcHlwaS5vcmc")
    out = []
    for i in range(max(1, len(secret) - width + 1)):
        piece = secret[i : i + width]
        if len(piece) < width or len(set(piece)) < 6 or any(piece in f or f in piece for f in fixed):
            continue
        if " " in piece or "\n" in piece:
            continue
        out.append(piece)
    return out
