// What a participant screened out by the onboarding reads: Prolific's comprehension-check policy asks that
// they return the study, never that their submission be rejected (docs/crowdsourcing.md, "Checks and
// Prolific's policy").
import React from "react";

export function ScreenedOut({ lead }) {
  return (
    <div data-testid="screened-out">
      {lead} This study is not for you: please return it (on Prolific: &quot;Return submission&quot;). A returned
      study does not count against you, and nothing you did is rejected.
    </div>
  );
}
