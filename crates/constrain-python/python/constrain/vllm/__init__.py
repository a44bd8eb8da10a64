"""constrain as a structured-output backend of vLLM.

Installed next to vLLM, the package registers itself through vLLM's ``vllm.general_plugins``
entry point, and the backend is chosen by name::

    vllm serve MODEL --structured-outputs-config '{"backend": "constrain"}'

    import constrain.vllm            # offline: before the config is built (see docs/vllm.md)
    from vllm import LLM
    llm = LLM(MODEL, structured_outputs_config={"backend": "constrain"})

Every request kind of vLLM is served (JSON schema, JSON object, regex, grammar in GBNF or Lark,
choice, structural tag); a spec that does not compile is refused with the compiler's message;
each output ends complete within the request's ``max_tokens``. How vLLM is extended, and why
that way, is in :mod:`._patches`.
"""

from __future__ import annotations

import logging

from ._backend import ConstrainBackend
from ._grammar import ConstrainGrammar
from ._specs import SpecError, compile_spec, is_lark

__all__ = [
    "SUPPORTED_VLLM",
    "ConstrainBackend",
    "ConstrainGrammar",
    "SpecError",
    "compile_spec",
    "is_lark",
    "register",
]

SUPPORTED_VLLM = ("0.32",)
"""vLLM release series the extension points were checked against (``major.minor``)."""

logger = logging.getLogger("vllm.constrain")  # a child of vLLM's logger: its handlers print it
_registered = False


def register() -> None:
    """The ``vllm.general_plugins`` entry point: makes "constrain" a backend name of vLLM.

    On a vLLM outside :data:`SUPPORTED_VLLM` nothing is changed and an error is logged, so vLLM
    keeps working with its own backends and refuses the name "constrain" in its config check.
    On a supported vLLM whose extension points do not have the expected shape it raises
    ``IncompatibleVllm`` (vLLM does not start). Safe to call more than once.
    """
    global _registered
    if _registered:
        return
    import vllm

    version = getattr(vllm, "__version__", "unknown")
    if not any(version == s or version.startswith(s + ".") for s in SUPPORTED_VLLM):
        logger.error(
            "constrain.vllm supports vLLM %s, found %s: the backend 'constrain' is not registered",
            ", ".join(s + ".x" for s in SUPPORTED_VLLM), version,
        )
        return
    _check_engine_processes_load_it()
    from . import _patches

    _patches.apply()
    _registered = True


def _check_engine_processes_load_it() -> None:
    """vLLM's engine runs in other processes, which get the backend only through the entry
    point: without it (a copy of the package on ``PYTHONPATH``) or with ``VLLM_PLUGINS``
    leaving it out, the name would be accepted here and every request fail there."""
    import os
    from importlib.metadata import entry_points

    names = [ep.name for ep in entry_points(group="vllm.general_plugins")
             if ep.value.split(":")[0] == __name__]
    if not names:
        raise RuntimeError(
            "constrain.vllm: the vllm.general_plugins entry point is not installed "
            "(install the package with pip, not by path); the backend is not registered"
        )
    allowed = os.environ.get("VLLM_PLUGINS")
    if allowed is not None and not set(names) & set(allowed.split(",")):
        raise RuntimeError(
            f"constrain.vllm: VLLM_PLUGINS={allowed!r} leaves out {names[0]!r}; the backend is not registered"
        )


def _register_on_import() -> None:
    """Importing ``constrain.vllm`` where vLLM is installed registers the backend, so offline
    users can name it before vLLM loads its plugins."""
    try:
        import vllm  # noqa: F401
    except ImportError:
        return
    try:
        register()
    except Exception:  # noqa: BLE001 - vLLM's own call of register() raises it again, loudly
        logger.exception("constrain.vllm could not extend this vLLM")


_register_on_import()
