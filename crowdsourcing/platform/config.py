"""Hydra run configs per task: ``crowdsourcing/<task>/conf/<name>.yaml`` over the task's dataclass.

``compose(spec, overrides)`` is what ``dialeval launch TASK [overrides]`` runs: Hydra's compose API
(no working-directory change, no Hydra logging setup), so it works the same from tests and the CLI.
"""
from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import Any

from parlai_dialeval.crowdsourcing.platform.registry import TaskSpec

TURN_TIMEOUT_HELP = ("seconds a worker may stay idle (no message, no click) before the HIT is ended as timed out; "
                     "their partial work is kept and exported as incomplete")


LANGUAGE_HELP = ("language of the worker page: its own words and the server's messages and questions, from a "
                 "catalogue in crowdsourcing/frontend/src/i18n/ (en; he, right to left); participants' and bots' "
                 "texts are shown as they are")


def language_field():
    """The study's language, checked at launch (platform/frontend.page_language)."""
    return field(default="en", metadata={"help": LANGUAGE_HELP})


def turn_timeout_field(default: int = 1200):
    """The per-task idle limit, the only wait a chat world applies to a worker between their actions."""
    return field(default=default, metadata={"help": TURN_TIMEOUT_HELP, "kind": "positive"})


def check_ranges(cfg) -> None:
    """Every setting of the composed config whose dataclass field declares a range (``metadata["kind"]``: one of
    options.checked's kinds; ``metadata["at_least"]``: a floor above the kind's; ``metadata["at_most"]``: a sibling
    setting it may not exceed), wherever it sits (the
    task's settings, its limits, Mephisto's blueprint args): out of range, one line naming it. Hydra checks only
    types, and a negative turn_timeout, zero turns or more inputs required than allowed launched a study no
    participant could do."""
    from omegaconf import DictConfig, OmegaConf

    from parlai_dialeval.errors import DialevalError
    from parlai_dialeval.options import checked

    def walk(node, path: str) -> None:
        fields = {f.name: f.metadata for f in dataclasses.fields(OmegaConf.get_type(node))} \
            if dataclasses.is_dataclass(OmegaConf.get_type(node)) else {}
        for key, raw in node.items_ex(resolve=False):  # unresolved: a value left ??? is skipped, not raised
            meta = fields.get(key, {})
            if isinstance(raw, DictConfig):
                walk(raw, f"{path}{key}.")
            elif meta.get("kind") and not OmegaConf.is_missing(node, key) and node[key] is not None:
                checked(f"{path}{key}", meta["kind"])(node[key])
                if meta.get("at_least") is not None and node[key] < meta["at_least"]:
                    raise DialevalError(f"{path}{key} {node[key]}: expected at least {meta['at_least']}"
                                        f" ({meta['why_at_least']})")
                bound = meta.get("at_most")
                if bound and node[bound] is not None:
                    if fields.get(bound, {}).get("kind"):  # the bound's own range said first
                        checked(f"{path}{bound}", fields[bound]["kind"])(node[bound])
                    if node[key] > node[bound]:
                        raise DialevalError(f"{path}{key} {node[key]}: expected at most {path}{bound} ({node[bound]})")

    walk(cfg, "")


# Mephisto's own TaskConfig defaults ask for a hydra/job_logging file its wheel omits; compose never
# configures logging, so our defaults list leaves that override out.


def task_config(conf_default: str, base: type) -> type:
    """A TaskConfig subclass whose defaults list picks ``conf/<conf_default>.yaml``."""

    @dataclass
    class Config(base):
        defaults: list[Any] = field(default_factory=lambda: ["_self_", {"conf": conf_default}])

    Config.__name__ = Config.__qualname__ = f"{base.__name__}WithDefaults"
    return Config


def compose(spec: TaskSpec, overrides: list[str] | None = None):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.config_store import ConfigStore
    from hydra.core.global_hydra import GlobalHydra
    from mephisto.operations.hydra_config import initialize_named_configs
    from omegaconf import OmegaConf

    initialize_named_configs()
    config_name = f"dialeval_{spec.name}"
    ConfigStore.instance().store(name=config_name, node=task_config(spec.default_conf, spec.config_class))
    GlobalHydra.instance().clear()
    # Mephisto 1.1.1's configs are written for Hydra 1.1 semantics; silence only the migration notice.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*version_base")
        with initialize_config_dir(config_dir=str(spec.task_dir), version_base="1.1"):
            try:
                cfg = hydra_compose(config_name=config_name,
                                    overrides=[f"task_dir={spec.task_dir}", *(overrides or [])])
                OmegaConf.to_container(cfg, resolve=True)  # a ${...} that cannot resolve: one line now, not later
            except Exception as error:
                raise override_error(error, spec) from None
    check_ranges(cfg)
    return cfg


def override_error(error: Exception, spec: TaskSpec) -> Exception:
    """Hydra's error about an override as one line saying what is wrong and what is valid (Hydra prints a
    long traceback with the useful sentence last); errors of other kinds are returned unchanged."""
    import dataclasses

    from hydra.errors import HydraException, MissingConfigException, OverrideParseException
    from omegaconf.errors import (ConfigAttributeError, ConfigKeyError, InterpolationResolutionError,
                                  OmegaConfBaseException, ValidationError)

    from parlai_dialeval.errors import DialevalError

    if not isinstance(error, (HydraException, OmegaConfBaseException)):
        return error
    chain = [error]
    while chain[-1].__cause__ is not None or chain[-1].__context__ is not None:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    for cause in chain:
        if isinstance(cause, (ConfigAttributeError, ConfigKeyError)) and getattr(cause, "full_key", None):
            kind = getattr(cause, "object_type", None)
            keys = sorted(f.name for f in dataclasses.fields(kind) if not f.name.startswith("_")) if (
                dataclasses.is_dataclass(kind)) else []
            group = cause.full_key.rpartition(".")[0] or "the config"
            return DialevalError(f"{cause.full_key}: no such setting in {group}"
                                 + (f"; valid keys: {', '.join(keys)}" if keys else ""))
        if isinstance(cause, (ValidationError, InterpolationResolutionError)) and getattr(cause, "full_key", None):
            return DialevalError(f"{cause.full_key}: {str(cause).splitlines()[0]}")
    if isinstance(error, MissingConfigException) and error.missing_cfg_file:
        group, _, name = error.missing_cfg_file.rpartition("/")
        return DialevalError(f"{group}={name}: no such option for {spec.name}; available: "
                             f"{', '.join(error.options or []) or 'none'}")
    if isinstance(error, OverrideParseException):
        return DialevalError(f"{str(error).splitlines()[0]}: expected KEY=VALUE (e.g. mephisto.architect.port=3100)")
    return DialevalError(" ".join(str(error).split()))
