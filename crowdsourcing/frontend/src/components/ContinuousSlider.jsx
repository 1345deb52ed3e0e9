// A 0-100 continuous scale labelled only at its ends (Ji et al. 2022, Sec. 3.1). The value is
// reported once the worker has moved the slider; `onChange(null)` never happens.
import React from "react";

export function ContinuousSlider({ name, statement, value, onChange, left = "strongly disagree", right = "strongly agree" }) {
  return (
    <div className="dialeval-slider" data-criterion-slot={name}>
      <p className="dialeval-statement">{statement}</p>
      <input
        type="range"
        min="0"
        max="100"
        step="1"
        value={value === null || value === undefined ? 50 : value}
        className={"custom-range" + (value === null || value === undefined ? " dialeval-untouched" : "")}
        onChange={(event) => onChange(Number(event.target.value))}
        onMouseUp={(event) => onChange(Number(event.target.value))}
        aria-label={statement}
      />
      <div className="dialeval-slider-ends">
        <span>{left}</span>
        <span>{right}</span>
      </div>
    </div>
  );
}
