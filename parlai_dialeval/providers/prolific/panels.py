"""Panels: a lab's trusted raters as a Prolific participant group of the workspace.

``dialeval prolific panel create|add|list`` keeps them; a launch with ``mephisto.provider.panel=NAME`` admits
only the panel's members (the study's ``participant_group_allowlist`` filter: Prolific's CLI
docs/examples/study-with-participant-group-allow-list.json), and ``mephisto.provider.add_to_panel=NAME`` gives
the study's completion code the action ``ADD_TO_PARTICIPANT_GROUP``, so everyone whose work is completed joins
that panel for later studies (the same example; Dallinger's prolific.py, its dev service's study). The block
group (``mephisto.provider.block_group``) is a participant group too, found the same way.
"""
from __future__ import annotations

from parlai_dialeval.errors import DialevalError


def find_group(client, workspace_id: str, name: str) -> dict | None:
    """The workspace's (not deleted) participant group called ``name``; None if there is none."""
    return next((g for g in client.groups(workspace_id) if g.get("name") == name), None)


def group_id(client, workspace_id: str, name: str, create: bool = False, what: str = "panel") -> str:
    """The id of group ``name``: created when missing and ``create``, else refused, saying how to make it."""
    found = find_group(client, workspace_id, name)
    if found is not None:
        return found["id"]
    if not create:
        raise DialevalError(f"no Prolific participant group {name!r} in the workspace ({what}); create it with "
                            f"`dialeval prolific panel create {name} --requester NAME`")
    return client.create_group(workspace_id, name)["id"]


def study_filters(client, workspace_id: str, provider) -> list[dict]:
    """The study's filter limiting it to ``provider.panel``'s members, if one is named."""
    if not provider.get("panel"):
        return []
    return [{"filter_id": "participant_group_allowlist",
             "selected_values": [group_id(client, workspace_id, provider.panel, what="mephisto.provider.panel")]}]


def completion_actions(client, workspace_id: str, provider) -> list[dict]:
    """What Prolific does with a completed submission: approve it at once (``auto_approve``, for studies whose
    quality check runs before submission) or keep it for review; and add the participant to
    ``provider.add_to_panel`` (created when missing)."""
    actions = [{"action": "AUTOMATICALLY_APPROVE" if provider.get("auto_approve") else "MANUALLY_REVIEW"}]
    if provider.get("add_to_panel"):
        actions.append({"action": "ADD_TO_PARTICIPANT_GROUP",
                        "participant_group": group_id(client, workspace_id, provider.add_to_panel, create=True)})
    return actions


# ---------------------------------------------------------------- `dialeval prolific panel`
def create(client, workspace_id: str, name: str) -> str:
    if find_group(client, workspace_id, name) is not None:
        raise DialevalError(f"a participant group {name!r} exists already in this workspace")
    return client.create_group(workspace_id, name)["id"]


def add(client, workspace_id: str, name: str, participant_ids: list[str]) -> int:
    """Add participants to the panel; returns how many members it has now."""
    if not participant_ids:
        raise DialevalError("panel add: name the participants' Prolific ids to add")
    return len(client.add_members(group_id(client, workspace_id, name), participant_ids))


def listing(client, workspace_id: str) -> list[dict]:
    """Every (not deleted) participant group of the workspace, with its member count."""
    return [{"name": g["name"], "id": g["id"], "members": g.get("participant_count", 0)}
            for g in client.groups(workspace_id)]
