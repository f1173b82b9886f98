"""Fig. 2: J1, J2, J4 on one T4 and one A10 (fig2 in experiments/paper_examples.yaml):
overhead-agnostic SRTF migrates J4 back and forth; FFT's opportunistic migration keeps it on the
T4. Two Gantt charts; the timings go to REPORT.md."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fairsim.figures import style
from fairsim.figures.tables import Check
from fairsim.paper.examples import fig2_example
from fairsim.paper.figures.example_panels import gantt_panels, gantt_rows


def results():
    example = fig2_example()
    return example, {name: example.run(policy) for name, policy in example.policies().items()}


def draw(inputs, out_dir: Path) -> list[Check]:
    example, runs = results()
    j4 = {name: r.jobs.iloc[1] for name, r in runs.items()}  # engine job 1 is J4
    titles = {
        name: f"{style.label(name)}: J4 done at {j4[name]['finish_s'] / 60:.2f} min, "
        f"{int(j4[name]['type_switches'])} migration(s), {j4[name]['overhead_s'] / 60:.0f} min moving"
        for name in runs
    }
    with style.paper_style():
        fig = gantt_panels(
            example, runs, titles, "Fig. 2: overhead-agnostic SRTF vs FFT (J4: 14.4 min on the T4, 2 min to move)", 1.9
        )
        style.save(
            fig,
            out_dir,
            "fig2",
            pd.concat([gantt_rows(example, r, name) for name, r in runs.items()], ignore_index=True),
        )
    agn, fft = j4["srtf_agnostic"], j4["ours"]
    return [
        Check(
            "Fig. 2",
            "J4 under FFT: finish, migration(s)",
            "14.4 min on the T4, not moved",
            f"{fft['finish_s'] / 60:.2f} min, {int(fft['type_switches'])} migration(s)",
            {"finish_min": fft["finish_s"] / 60, "migrations": int(fft["type_switches"])},
        ),
        Check(
            "Fig. 2",
            "J4 under overhead-agnostic SRTF: finish, migration(s)",
            "moved back and forth, finishes later",
            f"{agn['finish_s'] / 60:.2f} min, {int(agn['type_switches'])} migration(s)",
            {"finish_min": agn["finish_s"] / 60, "migrations": int(agn["type_switches"])},
        ),
        Check(
            "Fig. 2 / sec. 2",
            "share of J4's time spent migrating under overhead-agnostic SRTF",
            "about 40%",
            f"{agn['overhead_s'] / agn['jct_s']:.0%}",
            {"migrating_pct": 100 * agn["overhead_s"] / agn["jct_s"]},
        ),
    ]
