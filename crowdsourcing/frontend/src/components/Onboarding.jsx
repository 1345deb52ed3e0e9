// What a participant screened out by the onboarding reads: Prolific's comprehension-check policy asks that
// they return the study, never that their submission be rejected (docs/crowdsourcing.md, "Checks and
// Prolific's policy").
import React from "react";
import { t } from "./i18n";

export function ScreenedOut({ lead }) {
  return (
    <div data-testid="screened-out">
      {lead} {t("screened.return")}
    </div>
  );
}
