// A 0-100 continuous scale labelled only at its ends (Ji et al. 2022, Sec. 3.1). The value is
// reported once the worker has moved the slider; `onChange(null)` never happens.
import React from "react";
import { t } from "./i18n";

// A phone has no arrow keys to mention (its hint says drag or tap): touch screens are told apart by their touch points
const TOUCH = typeof window !== "undefined" && (window.navigator.maxTouchPoints > 0 || "ontouchstart" in window);

export function ContinuousSlider({ name, statement, value, onChange, left = t("slider.disagree"), right = t("slider.agree") }) {
  const moved = value !== null && value !== undefined;
  const id = "slider-" + name;
  return (
    <div className="dialeval-slider" data-criterion-slot={name}>
      <label className="dialeval-statement" htmlFor={id}>
        {statement}
      </label>
      <input
        id={id}
        type="range"
        min="0"
        max="100"
        step="1"
        value={moved ? value : 50}
        className={"custom-range" + (moved ? "" : " dialeval-untouched")}
        onChange={(event) => onChange(Number(event.target.value))}
        onMouseUp={(event) => onChange(Number(event.target.value))}
        aria-valuetext={moved ? t("slider.value_spoken", { value, left, right }) : t("slider.untouched_spoken")}
      />
      <div className="dialeval-slider-ends" aria-hidden="true">
        <span>{left}</span>
        <span>{right}</span>
      </div>
      <div className={"dialeval-slider-value" + (moved ? " dialeval-moved" : "")} data-testid={"slider-state-" + name}>
        {moved ? t("slider.value", { value }) : t(TOUCH ? "slider.untouched_touch" : "slider.untouched")}
      </div>
    </div>
  );
}
