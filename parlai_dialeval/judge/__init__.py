"""An LLM judge that answers the human protocols' questions on the humans' items (``dialeval judge``),
and its agreement with the humans (``dialeval judge_agreement``). See docs/judge.md."""
