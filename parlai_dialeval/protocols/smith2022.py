"""Smith et al. (2022), "Human Evaluation of Conversations is an Open Problem": SM-Turn, SM-Dialog,
PW-Turn and PW-Dialog (ACUTE-Eval, Li et al. 2019), with the wordings of sections 3.1.2-3.1.4."""
from __future__ import annotations

from parlai_dialeval.protocols.base import Protocol, Question, TurnPolicy

FIXED_OPENING = "Hi!"
CRITERIA = ("engaging", "humanlike", "interesting")
# config key of the pairwise questions -> the criterion they measure (docs/single_model_analysis.md)
PAIRWISE_IDS = {"preference": "engaging", "humanness": "humanlike", "interestingness": "interesting"}

PW_TURN = Protocol(
    "pw_turn", "PW-Turn: pairwise, per turn", "Smith et al. 2022, 3.1.2 and Appendix A",
    (Question("preference", "engaging",
              "Which next response from your partner would you prefer in a long conversation?", "pairwise"),
     Question("humanness", "humanlike", "Which next response from your partner sounds more human?", "pairwise"),
     Question("interestingness", "interesting",
              "If you had to say one of these responses is interesting and one is boring, "
              "which would you say is more interesting?", "pairwise")),
    TurnPolicy("turn", num_turns=6, fixed_opening=FIXED_OPENING, analysis_turns=(2, 6)))

PW_DIALOG = Protocol(
    "pw_dialog", "PW-Dialog / ACUTE-Eval: pairwise, whole conversations", "Smith et al. 2022, 3.1.3; Li et al. 2019",
    (Question("preference", "engaging", "Who would you prefer to talk to for a long conversation?", "pairwise"),
     Question("humanness", "humanlike", "Which speaker sounds more human?", "pairwise"),
     Question("interestingness", "interesting",
              "If you had to say one of these speakers is interesting and one is boring, "
              "who would you say is more interesting?", "pairwise")),
    TurnPolicy("dialog"))

SM_TURN = Protocol(
    "sm_turn", "SM-Turn: one model, each bot message ticked", "Smith et al. 2022, 3.1.4 and Figure 4",
    (Question("engaging", "engaging", "Engaging", "binary", (0, 1), label="Engaging"),
     Question("humanlike", "humanlike", "Human-like", "binary", (0, 1), label="Human-like"),
     Question("interesting", "interesting", "Interesting", "binary", (0, 1), label="Interesting")),
    TurnPolicy("turn", num_turns=6, fixed_opening=FIXED_OPENING, analysis_turns=(3, 6)),
    prompt="Tick every quality of your partner's message, or none of the above.",
    meta={"none_label": "None of the above"})

# The paper asks for 1-5 ratings of the partner "for each of the three evaluation metrics" without
# printing the wordings; these are the three metrics phrased about one partner (the pairwise wordings
# ask to choose between two speakers, which a single-model rating cannot).
SM_DIALOG = Protocol(
    "sm_dialog", "SM-Dialog: one model, 1-5 ratings after the conversation", "Smith et al. 2022, 3.1.4",
    (Question("engaging", "engaging",
              "How much would you like to talk to your partner for a long conversation?", "likert", (1, 5)),
     Question("humanlike", "humanlike", "How human does your partner sound?", "likert", (1, 5)),
     Question("interesting", "interesting", "How interesting is your partner?", "likert", (1, 5))),
    TurnPolicy("dialog", num_turns=6, fixed_opening=FIXED_OPENING),
    prompt="Rate your partner from 1 (not at all) to 5 (very much):")

PROTOCOLS = (PW_TURN, PW_DIALOG, SM_TURN, SM_DIALOG)
