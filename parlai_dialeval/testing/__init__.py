"""Tools for rehearsing evaluations offline: a fake OpenAI-compatible server
(``python -m parlai_dialeval.testing.fake_openai``)."""
