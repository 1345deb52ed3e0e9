"""``-m dialeval:hf_lm``: a Hugging Face causal language model as a ParlAI agent."""
