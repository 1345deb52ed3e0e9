// The instructions of Ji et al. (2022), Figure 5 (in the page's catalogue, src/i18n/), with the number of
// chatbots and the minimum number of inputs taken from the task's configuration; a three-line summary
// first, the paper's full list folded under it (thirteen points at once were more than people read).
import React from "react";
import { t, tList } from "../../components";

export function Instructions({ numSlots, minInputs }) {
  const vars = { slots: numSlots, minimum: minInputs };
  return (
    <div data-testid="instructions">
      <p>{t("live_chat.summary", vars)}</p>
      <details>
        <summary>{t("live_chat.all_instructions")}</summary>
        <ol className="small">
          {tList("live_chat.instructions", vars).map((item, idx) => (
            <li key={idx}>{item}</li>
          ))}
        </ol>
      </details>
    </div>
  );
}
