"""The kernel's exception hierarchy, translated once at each protocol edge (gRPC, MCP, REST).

Every error carries its data as attributes (``OwnershipError.owner``). Over gRPC the data travels as structure
(a ``google.rpc.ErrorInfo`` whose reason is the class's ``reason``; see engram.rpc), and the client rebuilds the
same class with the same data, so an error raised in ingest reaches the MCP tool intact.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

DEFAULT_RETRY_AFTER_SECONDS = 2.0


class EngramError(Exception):
    """Base of every error Engram reports to a caller; the message says what to do next."""

    code: ClassVar[str] = "internal"  # the kind, shared by gRPC status, REST status and MCP
    reason: ClassVar[str] = "ENGRAM_ERROR"  # the exact class, as it travels over gRPC
    by_reason: ClassVar[dict[str, type[EngramError]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "reason" not in cls.__dict__:
            cls.reason = _reason_of(cls.__name__)
        EngramError.by_reason[cls.reason] = cls

    def details(self) -> dict[str, str]:
        """The error's data as text, enough for rebuild() to make an equal error."""
        return {}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        """The error again from its message and details (on the other side of a gRPC call)."""
        return cls(message)


EngramError.by_reason[EngramError.reason] = EngramError


def _reason_of(name: str) -> str:
    """OwnershipError -> OWNERSHIP_ERROR."""
    out = [name[0]]
    for char in name[1:]:
        if char.isupper():
            out.append("_")
        out.append(char)
    return "".join(out).upper()


class InvalidArgument(EngramError):
    """The request is malformed: a field is missing, too large or of the wrong type."""

    code = "invalid_argument"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    def details(self) -> dict[str, str]:
        return {"field": self.field, "problem": self.problem}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        field, _, problem = message.partition(": ")
        return cls(details.get("field", field), details.get("problem", problem))


class NotFound(EngramError):
    """No memory with that id in the caller's namespace."""

    code = "not_found"

    def __init__(self, memory_id: str) -> None:
        super().__init__(
            f"No memory with id '{memory_id}' in this namespace. Use search_memory or list_memories to find ids."
        )
        self.memory_id = memory_id

    def details(self) -> dict[str, str]:
        return {"memory_id": self.memory_id}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(details.get("memory_id", ""))


class Unauthenticated(EngramError):
    """No valid credentials."""

    code = "unauthenticated"


class PermissionDenied(EngramError):
    """Authenticated, but not allowed to do this."""

    code = "permission_denied"


class OwnershipError(PermissionDenied):
    """Only the owning agent modifies a memory."""

    def __init__(self, owner: str, caller: str) -> None:
        super().__init__(
            f"Memory owned by '{owner}', you are '{caller}'. Use search_memory to read it, or save your own version."
        )
        self.owner = owner
        self.caller = caller

    def details(self) -> dict[str, str]:
        return {"owner": self.owner, "caller": self.caller}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(details.get("owner", ""), details.get("caller", ""))


class VersionConflict(EngramError):
    """The expected version of a compare-and-set did not match."""

    code = "failed_precondition"

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(f"Expected version {expected} but the memory is at version {actual}. Get it again and retry.")
        self.expected = expected
        self.actual = actual

    def details(self) -> dict[str, str]:
        return {"expected": str(self.expected), "actual": str(self.actual)}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(int(details.get("expected", 0)), int(details.get("actual", 0)))


class _Retryable(EngramError):
    """An error after which the same request may succeed later; retry_after says when (seconds)."""

    retry_after: float

    def details(self) -> dict[str, str]:
        return {"retry_after": f"{self.retry_after:g}"}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        error.retry_after = float(details.get("retry_after", DEFAULT_RETRY_AFTER_SECONDS))
        return error


class Unavailable(_Retryable):
    """A dependency (log, index) is not reachable or not caught up; retrying later may succeed."""

    code = "unavailable"

    def __init__(self, message: str, *, retry_after: float = DEFAULT_RETRY_AFTER_SECONDS) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class DiskFull(_Retryable):
    """The data dir (or the log's store) is out of space: writes are refused until space is freed."""

    code = "resource_exhausted"

    RESUMES = "Free some space; writes resume by themselves, no restart needed."

    def __init__(self, detail: str, *, hint: str = RESUMES, retry_after: float = 10.0) -> None:
        super().__init__(f"Disk full: {detail} {hint}".rstrip())
        self.retry_after = retry_after

    @classmethod
    def for_path(cls, path: str, free_bytes: int, reserve_bytes: int) -> DiskFull:
        mib = 1024 * 1024
        return cls(
            f"only {free_bytes // mib} MiB free in {path}; writes need at least {reserve_bytes // mib} MiB "
            "(ENGRAM_DISK_RESERVE_MB)."
        )


class PayloadTooLarge(EngramError):
    """A request body is over the size limit of its route."""

    code = "payload_too_large"

    def __init__(self, size: int | None, limit: int, what: str = "The request body") -> None:
        shown = f"{size} bytes" if size is not None else "larger than allowed"
        super().__init__(
            f"{what} is {shown}; the limit is {limit} bytes. Send less (split the content into several memories)."
        )
        self.size = size
        self.limit = limit
        self.what = what

    def details(self) -> dict[str, str]:
        return {"size": "" if self.size is None else str(self.size), "limit": str(self.limit), "what": self.what}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        size = details.get("size", "")
        return cls(int(size) if size else None, int(details.get("limit", 0)), details.get("what", "The request body"))


class RemoteError(EngramError):
    """An error a service reported over gRPC without structure (e.g. an older peer), kept with its kind."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code  # type: ignore[misc]  # per instance: the kind the peer reported


class NotImplementedYet(EngramError):
    """An RPC of the contract that a later release builds."""

    code = "unimplemented"

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not available yet in this version of Engram.")
        self.what = what

    def details(self) -> dict[str, str]:
        return {"what": self.what}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(details.get("what", message))
