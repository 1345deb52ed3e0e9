"""``-m dialeval:hf_chat``: local Hugging Face chat models as ParlAI agents."""
