"""The kernels the workbook starts itself talk over private Unix sockets (scaleout.kernels).

A real ipykernel is started through each manager class: it must answer, over ``ipc`` sockets
in a directory of this process's own, and two kernels alive at once must not share an address.
"""

from __future__ import annotations

import os
import stat

import pytest
from jupyter_client.manager import AsyncKernelManager, KernelManager
from scaleout import kernels


def test_each_manager_gets_its_own_socket_prefix() -> None:
    a, b = kernels.socket_prefix(), kernels.socket_prefix()
    assert a != b
    assert os.path.dirname(a) == os.path.dirname(b)
    mode = os.stat(os.path.dirname(a)).st_mode
    assert stat.S_IMODE(mode) == 0o700, oct(mode)  # only this user may bind or connect there
    assert len(a) + len("-5") < 104, a  # fits a Unix socket address on Linux and macOS


@pytest.mark.parametrize(("asynchronous", "base"), [(True, AsyncKernelManager),
                                                    (False, KernelManager)])
def test_manager_classes(asynchronous: bool, base: type) -> None:
    cls = kernels.kernel_manager_class(asynchronous)
    assert issubclass(cls, base)
    assert kernels.kernel_manager_class(asynchronous) is cls  # one class, made once


def test_two_kernels_at_once_answer_over_their_own_sockets() -> None:
    cls = kernels.kernel_manager_class(asynchronous=False)
    managers = [cls(kernel_name="python3") for _ in range(2)]
    clients = []
    try:
        for km in managers:
            km.start_kernel()
        infos = [km.get_connection_info() for km in managers]
        assert [i["transport"] for i in infos] == ["ipc", "ipc"]
        assert infos[0]["ip"] != infos[1]["ip"]
        for km, info in zip(managers, infos, strict=True):
            assert os.path.dirname(info["ip"]) == os.path.dirname(kernels.socket_prefix())
            kc = km.client()
            kc.start_channels()
            clients.append(kc)
            kc.wait_for_ready(timeout=60)
            reply = kc.execute_interactive("x = 6 * 7", timeout=60)
            assert reply["content"]["status"] == "ok"
            socket = f"{info['ip']}-{info['shell_port']}"
            assert stat.S_ISSOCK(os.stat(socket).st_mode), socket
    finally:
        for kc in clients:
            kc.stop_channels()
        for km in managers:
            if km.has_kernel:
                km.shutdown_kernel(now=True)
