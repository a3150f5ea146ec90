"""Engram's packages, found rather than listed: the kernel (engram/) and the services (services/, installed as
engram.services). Everything else is in pyproject.toml; this file exists because one `[tool.setuptools.packages.find]`
cannot put a second folder under another package's name. Data folders (the console's static files, the pack
template) are found as namespace packages, so `package-data` ships their files by pattern."""

from setuptools import find_namespace_packages, setup

SKIP = ["__pycache__", "*.__pycache__"]


def packages() -> list[str]:
    kernel = find_namespace_packages(include=["engram", "engram.*"], exclude=SKIP)
    services = find_namespace_packages("services", exclude=SKIP)
    return [*kernel, "engram.services", *(f"engram.services.{name}" for name in services)]


setup(packages=packages())
