"""Kernels the workbook starts itself (reports, notebook tests) talk over private Unix sockets.

A Jupyter kernel started the default way listens on five TCP ports that its manager picks by
binding port 0 and letting go again; another process on the machine may take such a port
before the kernel binds it (any outgoing connection draws its local port from the same
ephemeral range), and the kernel then dies with ``Address already in use`` before it
answers (jupyter_client's ``LocalPortCache`` guards against this only inside one process).
Two reports run at once, or the test suite's parallel workers, hit that race. Over the
``ipc`` transport the kernel binds Unix sockets instead; each manager here puts them in its
own directory, so no two kernels, in any process, can ask for the same address. Nothing
leaves the machine either way (the workbook's Voilà command uses the same transport).

Use :func:`kernel_manager_class` wherever papermill or nbclient take one::

    papermill.execute_notebook(..., kernel_manager_class=kernel_manager_class())
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
from functools import cache
from typing import Any

__all__ = ["kernel_manager_class", "socket_prefix"]


@cache
def _socket_dir() -> str:
    """One private directory per process for kernel sockets, removed when the process ends."""
    path = tempfile.mkdtemp(prefix="scaleout-kernels-")
    atexit.register(shutil.rmtree, path, True)
    return path


def socket_prefix() -> str:
    """A new, unique socket path prefix: the kernel binds ``<prefix>-1`` ... ``<prefix>-5``.

    Short (a Unix socket path holds at most 107 bytes on Linux, 103 on macOS) and in a
    directory only this process writes to.
    """
    return os.path.join(_socket_dir(), uuid.uuid4().hex[:12])


@cache
def kernel_manager_class(asynchronous: bool = True) -> type[Any]:
    """A jupyter_client kernel manager whose kernels use the ``ipc`` transport at a unique path.

    Parameters
    ----------
    asynchronous
        ``True`` for nbclient and papermill (``AsyncKernelManager``), ``False`` for callers of
        the blocking ``KernelManager`` (nbval).
    """
    from jupyter_client.manager import AsyncKernelManager, KernelManager
    from traitlets import default

    base = AsyncKernelManager if asynchronous else KernelManager

    class SocketKernelManager(base):  # type: ignore[misc, valid-type]
        @default("transport")
        def _transport_default(self) -> str:
            return "ipc"

        @default("ip")
        def _ip_default(self) -> str:
            return socket_prefix()

    SocketKernelManager.__name__ = SocketKernelManager.__qualname__ = (
        f"{'Async' if asynchronous else ''}SocketKernelManager")
    return SocketKernelManager
