"""``-m dialeval:tfidf_retrieval``: reply with the best-matching response of a corpus.

The user's last message is compared (TF-IDF cosine, scikit-learn) with every training response
(``--retrieval-match response``, the default, ranking candidates as ParlAI's IR baseline does) or
with the turn each response answered (``message``: a nearest-neighbour chatbot, which on chatterbot
scores above the tiny trained LM, so no longer the middle quality level; docs/bots_and_teachers.md);
the best match's response is returned (ties: the first in corpus order), so the bot is
deterministic. ``retrieval_audit`` on each reply names the match and its similarity.
"""
from __future__ import annotations

from parlai.core.agents import Agent
from parlai.core.message import Message
from parlai.core.opt import Opt
from sklearn.feature_extraction.text import TfidfVectorizer

from parlai_dialeval.agents.qc_bot.corpus import DEFAULT_TASK, corpus_from_opt

DEFAULTS = {"retrieval_task": DEFAULT_TASK, "retrieval_file": None, "retrieval_match": "response"}


class TfidfRetrievalAgent(Agent):
    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        group = parser.add_argument_group("TF-IDF retrieval bot")
        group.add_argument("--retrieval-task", type=str, default=DEFAULTS["retrieval_task"],
                           help="ParlAI teacher whose training dialogues are the candidate responses")
        group.add_argument("--retrieval-file", type=str, default=DEFAULTS["retrieval_file"],
                           help="text or JSONL corpus (as for --qc-file); overrides --retrieval-task")
        group.add_argument("--retrieval-match", type=str, default=DEFAULTS["retrieval_match"],
                           choices=["response", "message"],
                           help="compare the user's message with the candidate responses themselves, or with "
                                "the messages they answered")
        return parser

    def __init__(self, opt, shared=None):
        opt = Opt({**DEFAULTS, **opt})  # create_agent(dict) gets no parser defaults
        super().__init__(opt, shared)
        self.id = "TfidfRetrieval"
        if shared is None:
            corpus = corpus_from_opt(opt, "retrieval_task", "retrieval_file")
            pairs = [(c.split("\n")[-1], r) for c, r, _ in corpus.pairs() if c]
            if not pairs:
                raise ValueError(f"{corpus.source}: no (message, response) pairs to retrieve from")
            vectorizer = TfidfVectorizer(lowercase=True, sublinear_tf=True)
            keys = [message if opt["retrieval_match"] == "message" else response for message, response in pairs]
            matrix = vectorizer.fit_transform(keys)
            self.index = {"pairs": pairs, "keys": keys, "vectorizer": vectorizer, "matrix": matrix}
        else:
            self.index = shared["index"]

    def share(self):
        shared = super().share()
        shared["index"] = self.index
        return shared

    def respond_to(self, text: str) -> Message:
        query = self.index["vectorizer"].transform([text or ""])
        scores = (self.index["matrix"] @ query.T).toarray().ravel()
        best = int(scores.argmax())
        return Message({"id": self.id, "text": self.index["pairs"][best][1], "episode_done": False,
                        "retrieval_audit": {"matched": self.index["keys"][best],
                                            "similarity": round(float(scores[best]), 4)}})

    def act(self):
        # a task that shows the bot the dialogue so far as one message (PW-Turn; a conversation carried on
        # after a crash) joins its turns with newlines, ParlAI's history delimiter: the last one is the
        # user's message; matched against the whole, the opening "Hi!" made every reply "Hi"
        text = (self.observation or {}).get("text") or ""
        return self.respond_to(text.rsplit("\n", 1)[-1])
