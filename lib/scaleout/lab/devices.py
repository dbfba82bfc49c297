"""Virtual CPU devices for JAX, set before JAX is imported, and a compilation cache.

XLA's CPU backend shows one device unless ``--xla_force_host_platform_device_count=N``
is in ``XLA_FLAGS`` when JAX initialises; after that the count is fixed for the life of
the process. :func:`use_devices` sets the flag if JAX has not been imported yet and
refuses, with a message saying what to do, if it was imported with fewer devices.

Compiling a sharded training step takes seconds on a laptop; JAX's persistent
compilation cache (``jax_compilation_cache_dir``) keeps the compiled programs on disk,
so a second run of a notebook or a test reads them back in a fraction of a second.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from ..checks import check_int

__all__ = ["DEVICE_FLAG", "FAST_COMPILE_FLAG", "cache_dir", "jax_module", "use_devices"]

#: The XLA flag that splits the host CPU into N devices.
DEVICE_FLAG = "--xla_force_host_platform_device_count"
#: The lab's programs are tiny: LLVM's optimisations of the CPU code cost more compile time
#: (about half of it) than they save in run time. The HLO passes that partition the program
#: and insert, combine and schedule its collectives run the same either way.
FAST_COMPILE_FLAG = "--xla_backend_optimization_level=0"
#: Environment variable naming the compilation cache folder (``off`` disables it).
CACHE_ENV = "SCALEOUT_JAX_CACHE"


def cache_dir() -> Path | None:
    """Where compiled programs are cached: ``$SCALEOUT_JAX_CACHE``, else
    ``$XDG_CACHE_HOME/scaleout/jax`` (``~/.cache/scaleout/jax``); None if set to ``off``."""
    value = os.environ.get(CACHE_ENV, "")
    if value.lower() in ("off", "0", "no", "false"):
        return None
    if value:
        return Path(value).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "scaleout" / "jax"


def jax_module():
    """``import jax``, or a ``ValueError`` saying how to install it."""
    try:
        import jax
    except ImportError:
        raise ValueError("the lab needs JAX: install the workbook's requirements "
                         "(./workbook setup, or pip install 'jax[cpu]')") from None
    return jax


def _flag_count(flags: str) -> int | None:
    m = re.search(rf"{DEVICE_FLAG}=(\d+)", flags)
    return int(m.group(1)) if m else None


def use_devices(n: int = 8, *, cache: bool = True, fast_compile: bool = True) -> int:
    """Make JAX see ``n`` CPU devices (or more); returns the number it sees.

    Call it before anything imports JAX (a notebook's first code cell). If JAX is
    not imported yet, ``XLA_FLAGS`` gets ``--xla_force_host_platform_device_count=n``
    (replacing a smaller count already there). If JAX was imported already, nothing
    can change its device count: with at least ``n`` devices this is fine, with fewer
    it is a ``ValueError`` that says to restart the kernel (or process) and call this
    first. With ``cache`` the persistent compilation cache of :func:`cache_dir` is on; with
    ``fast_compile`` (if JAX is not imported yet and ``XLA_FLAGS`` does not set it)
    :data:`FAST_COMPILE_FLAG` too.
    """
    n = check_int("n", n, maximum=512)
    if "jax" not in sys.modules:
        flags = os.environ.get("XLA_FLAGS", "")
        have = _flag_count(flags)
        if have is None:
            flags = f"{flags} {DEVICE_FLAG}={n}".strip()
        elif have < n:
            flags = re.sub(rf"{DEVICE_FLAG}=\d+", f"{DEVICE_FLAG}={n}", flags)
        if fast_compile and "--xla_backend_optimization_level" not in flags:
            flags = f"{flags} {FAST_COMPILE_FLAG}"
        os.environ["XLA_FLAGS"] = flags
    jax = jax_module()
    try:
        count = len(jax.devices("cpu"))
    except RuntimeError as exc:  # pragma: no cover - a broken JAX install
        raise ValueError(f"JAX could not start its CPU backend: {exc}") from None
    if count < n:
        raise ValueError(
            f"JAX was imported before scaleout.lab.devices.use_devices({n}) and sees only "
            f"{count} CPU device(s); the count is fixed once JAX starts. Restart the kernel "
            f"(or process) and call use_devices({n}) before anything imports JAX, or set "
            f"XLA_FLAGS={DEVICE_FLAG}={n} in the environment")
    if cache:
        _enable_cache(jax)
    return count


def _enable_cache(jax) -> None:
    folder = cache_dir()
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
