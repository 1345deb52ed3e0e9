"""Rankings per topic category of the live-chat scores (analysis/categories.live_chat_rankings): the researcher's
rules matched against each conversation's opening topic, or the topics themselves where there are few."""
from __future__ import annotations

from parlai_dialeval.results.section import Section
from parlai_dialeval.results.sections import categories
from parlai_dialeval.results.sections.live_chat_style import ALPHA, passing

MAX_TOPICS = 10  # more distinct live-chat topics than this: per-topic rankings need a rule file grouping them


def compute(inputs, config, done: dict):
    """A categories.Categories, a sentence saying why there is none (too many topics), or None (no topics)."""
    from parlai_dialeval.analysis import categories as statistics
    from parlai_dialeval.results.sections.style import given

    if inputs.data is None:
        return None
    topics = inputs.data.conversation_fields()
    if "topic" not in topics:
        return None
    conv = passing(inputs.core)
    topic = conv["conversation_id"].map(topics.assign(id=topics["id"].astype(str)).set_index("id")["topic"])
    if given(config.categories):
        where = f"the rules of {config.categories}" if isinstance(config.categories, str) else "the rules given"
        membership = statistics.rule_membership(topic, categories.rules(config.categories))
        source = f"{where} matched against the opening topic"
    elif 2 <= topic.nunique() <= MAX_TOPICS:
        membership, source = statistics.label_membership(topic), "the opening topics"
    elif topic.nunique() > MAX_TOPICS:
        return (f"No ranking per topic: {topic.nunique()} distinct opening topics (more than {MAX_TOPICS}); group "
                "them with --categories RULES.yaml.")
    else:
        return None
    membership.index = conv.index
    return categories.described(statistics.live_chat_rankings(conv, membership, ALPHA), membership, source, ALPHA)


def _ranked(part) -> bool:
    return isinstance(part, categories.Categories)


SECTION = Section("categories", compute,
                  tables=lambda part: {"category_rankings": part.rankings} if _ranked(part) else {},
                  summary=lambda part: categories.summary(part) if _ranked(part) else {},
                  sentences=lambda part: [] if _ranked(part) else [part], title="Rankings per topic",
                  config=categories.SECTION.config)
