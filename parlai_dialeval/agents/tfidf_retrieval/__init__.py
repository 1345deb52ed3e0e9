"""``-m dialeval:tfidf_retrieval``: an offline TF-IDF retrieval bot over a dialogue corpus."""
