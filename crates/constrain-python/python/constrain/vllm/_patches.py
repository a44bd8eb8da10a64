"""How "constrain" becomes a structured-output backend of vLLM.

vLLM has no registry of structured-output backends: the name is a ``Literal`` in
``StructuredOutputsConfig`` (validated by pydantic), the front end picks a backend per request
in ``SamplingParams._validate_structured_outputs`` (any unknown name would be treated as
``"auto"``, which is xgrammar), and the engine's ``StructuredOutputManager`` builds the backend
from an ``if``/``elif`` on the name. Each of the three is extended here, in every vLLM process
(the ``vllm.general_plugins`` entry point runs :func:`apply` in each), and each extension
leaves every other backend name to vLLM's own code. The manager also passes the request's
``max_tokens`` to the grammar, which vLLM's interface does not carry.

Every function here checks that what it wraps has the shape it expects, and raises
:class:`IncompatibleVllm` otherwise: a vLLM these patches do not fit fails at start-up, it does
not quietly serve with another backend.
"""

from __future__ import annotations

import functools
import inspect
import logging
from typing import Any, Literal, get_args

from .. import Vocabulary
from ._backend import REQUEST, ConstrainBackend
from ._specs import SpecError, compile_spec

NAME = "constrain"
logger = logging.getLogger("vllm.constrain")  # a child of vLLM's logger: its handlers print it


class IncompatibleVllm(RuntimeError):
    """The installed vLLM does not have the extension points these patches wrap."""


def apply() -> None:
    """Extends vLLM (idempotent): the backend name, the front end's request check, the engine's
    backend construction and token budget."""
    _extend_config_literal()
    _wrap_request_validation()
    _wrap_manager()


def _expect(owner: Any, name: str, params: list[str]) -> Any:
    function = getattr(owner, name, None)
    if function is None:
        raise IncompatibleVllm(f"{owner.__module__}.{owner.__qualname__}.{name} is missing")
    found = list(inspect.signature(function).parameters)
    if found[: len(params)] != params:
        raise IncompatibleVllm(
            f"{owner.__qualname__}.{name} takes {found}, constrain.vllm expects {params}"
        )
    return function


def _extend_config_literal() -> None:
    """Adds "constrain" to ``StructuredOutputsConfig.backend`` and rebuilds its validator."""
    from pydantic.dataclasses import rebuild_dataclass
    from vllm.config import structured_outputs as module

    cls = module.StructuredOutputsConfig
    field = getattr(cls, "__dataclass_fields__", {}).get("backend")
    if field is None:
        raise IncompatibleVllm("StructuredOutputsConfig has no `backend` field")
    names = get_args(field.type)
    if not names:
        raise IncompatibleVllm(f"StructuredOutputsConfig.backend is {field.type!r}, not a Literal")
    if NAME in names:
        return
    extended = Literal[names + (NAME,)]  # type: ignore[valid-type]
    field.type = extended
    cls.__annotations__["backend"] = extended
    module.StructuredOutputsBackend = extended
    rebuild_dataclass(cls, force=True)


def _wrap_request_validation() -> None:
    """The front end's per-request check: with backend "constrain", the request's spec is
    compiled against a byte vocabulary, so a spec that cannot be compiled is refused at once
    (HTTP 400 on the server) with the compiler's message; vLLM's own checks run otherwise."""
    from vllm.sampling_params import SamplingParams

    original = _expect(
        SamplingParams, "_validate_structured_outputs",
        ["self", "model_config", "structured_outputs_config", "tokenizer"],
    )
    if getattr(original, "_constrain", False):
        return

    @functools.wraps(original)
    def validate(self: Any, model_config: Any, structured_outputs_config: Any, tokenizer: Any) -> None:
        if (
            structured_outputs_config is None
            or self.structured_outputs is None
            or structured_outputs_config.backend != NAME
        ):
            return original(self, model_config, structured_outputs_config, tokenizer)
        _check_request(self, model_config, tokenizer)

    validate._constrain = True  # type: ignore[attr-defined]
    SamplingParams._validate_structured_outputs = validate


def _check_request(params: Any, model_config: Any, tokenizer: Any) -> None:
    from vllm.exceptions import VLLMValidationError
    from vllm.v1.structured_output.request import get_structured_output_key

    so = params.structured_outputs
    if getattr(model_config, "is_diffusion", False):
        raise VLLMValidationError("structured outputs need left-to-right decoding (not diffusion models)")
    if tokenizer is None:
        raise VLLMValidationError("structured outputs need a tokenizer (not skip_tokenizer_init)")
    if so._backend not in (None, NAME):
        raise VLLMValidationError(
            f"the request asks for backend {so._backend!r}; this server uses {NAME!r}"
        )
    so._backend = NAME
    so.__post_init__()
    kind, spec = get_structured_output_key(so)
    try:
        compile_spec(kind.name, spec, _byte_vocabulary(), compact=bool(so.disable_any_whitespace))
    except SpecError as e:
        raise VLLMValidationError(str(e)) from None


@functools.lru_cache(maxsize=1)
def _byte_vocabulary() -> Vocabulary:
    """One token per byte and an end: enough to find every error a spec can have."""
    return Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b"</s>"], [256])


def _wrap_manager() -> None:
    """The engine's ``StructuredOutputManager``: builds the constrain backend at start-up when
    it is configured (so an unusable tokenizer fails there), and gives each grammar its
    request's ``max_tokens``."""
    from vllm.v1.structured_output import StructuredOutputManager as Manager

    init = _expect(Manager, "__init__", ["self", "vllm_config"])
    create = _expect(Manager, "_create_grammar", ["self", "request"])
    if getattr(init, "_constrain", False):
        return

    @functools.wraps(init)
    def new_init(self: Any, vllm_config: Any, *args: Any, **kwargs: Any) -> None:
        init(self, vllm_config, *args, **kwargs)
        if vllm_config.structured_outputs_config.backend != NAME:
            return
        if getattr(self, "backend", "missing") is not None or not hasattr(self, "tokenizer"):
            raise IncompatibleVllm("StructuredOutputManager has no tokenizer or an unexpected backend")
        self.backend = ConstrainBackend(
            vllm_config, tokenizer=self.tokenizer, vocab_size=vllm_config.model_config.get_vocab_size()
        )
        logger.info(
            "constrain structured-output backend active (%d-token vocabulary, %d end tokens)",
            self.backend.vocab_size, len(self.backend.vocabulary.eos_ids),
        )

    @functools.wraps(create)
    def new_create(self: Any, request: Any) -> Any:
        REQUEST.max_tokens = getattr(request, "max_tokens", None)
        try:
            return create(self, request)
        finally:
            REQUEST.max_tokens = None

    new_init._constrain = True  # type: ignore[attr-defined]
    Manager.__init__ = new_init
    Manager._create_grammar = new_create
