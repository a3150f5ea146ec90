"""The kernel's exception hierarchy, translated once at each protocol edge (gRPC, MCP, REST)."""

from __future__ import annotations


class EngramError(Exception):
    """Base of every error Engram reports to a caller; the message says what to do next."""

    code = "internal"


class InvalidArgument(EngramError):
    """The request is malformed: a field is missing, too large or of the wrong type."""

    code = "invalid_argument"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class NotFound(EngramError):
    """No memory with that id in the caller's namespace."""

    code = "not_found"

    def __init__(self, memory_id: str) -> None:
        super().__init__(
            f"No memory with id '{memory_id}' in this namespace. Use search_memory or list_memories to find ids."
        )
        self.memory_id = memory_id


class Unauthenticated(EngramError):
    """No valid credentials."""

    code = "unauthenticated"


class PermissionDenied(EngramError):
    """Authenticated, but not allowed to do this."""

    code = "permission_denied"


class OwnershipError(PermissionDenied):
    """Only the owning agent modifies a memory."""

    def __init__(self, owner: str, caller: str) -> None:
        super().__init__(f"Memory owned by '{owner}', you are '{caller}'. Use search_memory to read it.")
        self.owner = owner
        self.caller = caller


class VersionConflict(EngramError):
    """The expected version of a compare-and-set did not match."""

    code = "failed_precondition"

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(f"Expected version {expected} but the memory is at version {actual}. Get it again and retry.")
        self.expected = expected
        self.actual = actual


DEFAULT_RETRY_AFTER_SECONDS = 2.0


class Unavailable(EngramError):
    """A dependency (log, index) is not reachable or not caught up; retrying later may succeed."""

    code = "unavailable"

    def __init__(self, message: str, *, retry_after: float = DEFAULT_RETRY_AFTER_SECONDS) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class DiskFull(EngramError):
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


class RemoteError(EngramError):
    """An error a service reported over gRPC, kept with its kind so the next edge can translate it again."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class NotImplementedYet(EngramError):
    """An RPC of the contract that a later release builds."""

    code = "unimplemented"

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not available yet in this version of Engram.")
        self.what = what
