"""``-m dialeval:openai_chat``: OpenAI-compatible chat-completions endpoints as ParlAI agents."""
