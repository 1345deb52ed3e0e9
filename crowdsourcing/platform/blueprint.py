"""``dialeval_chat``: Mephisto's ParlAI-chat blueprint serving our prebuilt frontend bundle.

The stock builder runs ``npm install`` inside site-packages when it finds no build and serves an
index.html that loads CSS from a CDN; ours copies ``crowdsourcing/frontend/build/<entry>/bundle.js``
and our CDN-free index.html instead, and never builds anything at launch time.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_blueprint import (
    ParlAIChatBlueprint,
    ParlAIChatBlueprintArgs,
)
from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_task_builder import ParlAIChatTaskBuilder
from mephisto.operations.registry import register_mephisto_abstraction
from omegaconf import MISSING

from parlai_dialeval.crowdsourcing.platform import frontend

BLUEPRINT_TYPE_DIALEVAL_CHAT = "dialeval_chat"


class DialevalChatTaskBuilder(ParlAIChatTaskBuilder):
    def build_in_dir(self, build_dir: str):
        target = Path(build_dir) / "static"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(frontend.bundle_path(self.args.blueprint.frontend_entry), target / "bundle.js")
        for path in frontend.static_files():
            shutil.copy2(path, target / path.name)
        (Path(build_dir) / self.BUILT_FILE).write_text(self.BUILT_MESSAGE)


@dataclass
class DialevalChatBlueprintArgs(ParlAIChatBlueprintArgs):
    _blueprint_type: str = BLUEPRINT_TYPE_DIALEVAL_CHAT
    _group: str = field(default="DialevalChatBlueprint", metadata={
        "help": "A ParlAI-chat task whose worker page is a prebuilt entry of crowdsourcing/frontend"})
    frontend_entry: str = field(default=MISSING, metadata={
        "help": "name of the frontend entry: crowdsourcing/frontend/src/tasks/<entry>/index.jsx", "required": True})


@register_mephisto_abstraction()
class DialevalChatBlueprint(ParlAIChatBlueprint):
    TaskBuilderClass = DialevalChatTaskBuilder
    ArgsClass = DialevalChatBlueprintArgs
    BLUEPRINT_TYPE = BLUEPRINT_TYPE_DIALEVAL_CHAT
